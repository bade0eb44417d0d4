//! EXPLAIN's physical section: a pipeline and its build sides resolved as
//! the run layer would resolve them, but with nothing run, so what depends
//! on rows not yet computed (whether a hash join's build keys are unique) is
//! left to run time and said so.

use std::fmt::Write;
use std::sync::Arc;

use kith_common::Result;

use crate::operator::QueryContext;

use crate::physical::*;

/// A pipeline resolved without running: its operators as PROFILE names
/// them, the rewrites that fired, and the build sides that run before it.
pub(crate) struct PipelineDescription {
    pub(crate) labels: Vec<String>,
    pub(crate) rewrites: Vec<&'static str>,
    pub(crate) deps: Vec<PipelineDescription>,
}

/// Resolves `plan` and its build sides with `opts` (a build side with its
/// own) and runs nothing.
pub(crate) fn describe_pipeline(
    plan: &PipelinePlan<'_>,
    opts: &BuildOptions,
    ctx: &Arc<QueryContext>,
) -> Result<PipelineDescription> {
    let side = BuildOptions::build_side(opts.threads);
    let deps = plan
        .deps
        .iter()
        .map(|d| describe_pipeline(&d.pipeline, &side, ctx))
        .collect::<Result<Vec<_>>>()?;
    let shape = PipelineShape::build(plan, opts, ctx, None, BuildResults::NotRun)?;
    Ok(PipelineDescription {
        labels: shape.labels,
        rewrites: shape.rewrites,
        deps,
    })
}

impl PipelineDescription {
    /// Its lines at `depth`, as pipeline number `*number` (counted on in
    /// the order the pipelines are listed), then its build sides one level
    /// deeper.
    pub(crate) fn write(&self, number: &mut usize, depth: usize, out: &mut String) {
        let this = *number;
        let indent = "  ".repeat(depth);
        for label in &self.labels {
            let _ = writeln!(out, "{indent}  {label}");
        }
        if !self.rewrites.is_empty() {
            let _ = writeln!(out, "{indent}  rewrites: {}", self.rewrites.join(", "));
        }
        for dep in &self.deps {
            *number += 1;
            let _ = writeln!(
                out,
                "{indent}  pipeline {} (build side of pipeline {this}, runs before it):",
                *number
            );
            dep.write(number, depth + 1, out);
        }
    }
}
