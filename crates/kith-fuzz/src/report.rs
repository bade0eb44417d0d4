//! Findings: what failed, and a self-contained script that reproduces it
//! (schema, data, writes, the statements that show the failure) with the
//! expected and actual results as comments.

use std::path::{Path, PathBuf};

use crate::exec::TIMEOUT_MS;
use crate::oracle::{Case, Failure, Oracle};

#[derive(Debug, Clone)]
pub struct Finding {
    pub oracle: Oracle,
    /// `crash` findings that were interruptions are reported as hangs.
    pub hang: bool,
    pub master_seed: u64,
    pub case: Case,
    pub failure: Failure,
    /// Nodes and rels before minimizing.
    pub original_size: (usize, usize),
    pub minimized: bool,
}

impl Finding {
    /// `tlp`, `norec`, `diff`, `write`, `crash` or `hang`.
    pub fn label(&self) -> &'static str {
        if self.hang {
            "hang"
        } else {
            self.oracle.name()
        }
    }

    /// A script that reproduces the finding in the shell
    /// (`kith :memory: < file`), expected and actual results in comments.
    pub fn script(&self) -> String {
        let mut s = String::new();
        let comment = |s: &mut String, text: &str| {
            for line in text.lines() {
                s.push_str("// ");
                s.push_str(line);
                s.push('\n');
            }
        };
        comment(
            &mut s,
            &format!(
                "kith-fuzz finding: oracle {}, master seed {}, case seed {} (rerun: kith-fuzz --case {})",
                self.label(),
                self.master_seed,
                self.case.seed,
                self.case.seed
            ),
        );
        comment(&mut s, &self.failure.summary);
        comment(
            &mut s,
            &format!(
                "graph: {} nodes, {} rels{}",
                self.case.graph.nodes.len(),
                self.case.graph.rels.len(),
                if self.minimized {
                    format!(
                        " (minimized from {} nodes, {} rels)",
                        self.original_size.0, self.original_size.1
                    )
                } else {
                    String::new()
                }
            ),
        );
        s.push_str(&format!("CALL timeout={TIMEOUT_MS};\n"));
        for stmt in self.case.graph.script() {
            s.push_str(&stmt);
            s.push_str(";\n");
        }
        if !self.case.writes.is_empty() {
            comment(&mut s, "writes before the check:");
            for w in &self.case.writes {
                s.push_str(w);
                s.push_str(";\n");
            }
        }
        comment(&mut s, "the check:");
        for stmt in &self.failure.statements {
            s.push_str(stmt);
            s.push_str(";\n");
        }
        comment(&mut s, "expected:");
        comment(&mut s, &indent(&self.failure.expected));
        comment(&mut s, "actual:");
        comment(&mut s, &indent(&self.failure.actual));
        s
    }

    /// A few lines for the console.
    pub fn brief(&self) -> String {
        let last = self
            .failure
            .statements
            .last()
            .map(String::as_str)
            .unwrap_or("");
        format!(
            "[{}] case {}: {}\n    {}",
            self.label(),
            self.case.seed,
            self.failure.summary,
            last
        )
    }

    /// Writes the script to `dir/<label>-<case seed>[-n].cypher`.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let mut n = 0;
        loop {
            let name = if n == 0 {
                format!("{}-{}.cypher", self.label(), self.case.seed)
            } else {
                format!("{}-{}-{n}.cypher", self.label(), self.case.seed)
            };
            let path = dir.join(name);
            if !path.exists() {
                std::fs::write(&path, self.script())?;
                return Ok(path);
            }
            n += 1;
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
