//! A small Gherkin parser: just what the openCypher TCK feature files use
//! (Feature, Background, Scenario, Scenario Outline with Examples, steps with
//! doc strings and data tables, tags and `#` comments).

/// One step (`Given`, `When`, `Then`, `And`, `But`) with its argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The keyword as written (`Given`, `And`, ...).
    pub keyword: String,
    /// The text after the keyword, trailing `:` included.
    pub text: String,
    pub docstring: Option<String>,
    pub table: Option<Vec<Vec<String>>>,
    pub line: usize,
}

/// A concrete scenario: outlines are expanded, one per example row.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The name as written (placeholders of an outline not substituted), which
    /// together with `example` forms a stable id.
    pub name: String,
    /// The name with an outline's placeholders substituted.
    pub display_name: String,
    /// Index of the example row (across all Examples blocks) for outlines.
    pub example: Option<usize>,
    pub tags: Vec<String>,
    /// Background steps first, then the scenario's own.
    pub steps: Vec<Step>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Feature {
    pub name: String,
    pub tags: Vec<String>,
    pub scenarios: Vec<Scenario>,
}

#[derive(Debug)]
enum Block {
    None,
    Background,
    Scenario {
        name: String,
        tags: Vec<String>,
        line: usize,
        outline: bool,
        steps: Vec<Step>,
        examples: Vec<Vec<Vec<String>>>,
        in_examples: bool,
    },
}

/// Splits a `| a | b |` row into trimmed cells (`\|`, `\\` and `\n` unescaped).
pub fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('|') => cur.push('|'),
                Some('n') => cur.push('\n'),
                Some('\\') => cur.push('\\'),
                Some(o) => {
                    cur.push('\\');
                    cur.push(o);
                }
                None => cur.push('\\'),
            },
            '|' => {
                cells.push(cur.trim().to_string());
                cur.clear();
            }
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        cells.push(cur.trim().to_string());
    }
    cells
}

const STEP_KEYWORDS: [&str; 6] = ["Given", "When", "Then", "And", "But", "*"];

fn substitute(text: &str, header: &[String], row: &[String]) -> String {
    let mut out = text.to_string();
    for (h, v) in header.iter().zip(row) {
        out = out.replace(&format!("<{h}>"), v);
    }
    out
}

fn finish(block: Block, background: &[Step], out: &mut Vec<Scenario>) -> Result<(), String> {
    if let Block::Scenario {
        name,
        tags,
        line,
        outline,
        steps,
        examples,
        ..
    } = block
    {
        let mut all = background.to_vec();
        all.extend(steps);
        if !outline {
            out.push(Scenario {
                display_name: name.clone(),
                name,
                example: None,
                tags,
                steps: all,
                line,
            });
            return Ok(());
        }
        let mut index = 0;
        for table in examples {
            let Some((header, rows)) = table.split_first() else {
                continue;
            };
            for row in rows {
                let steps = all
                    .iter()
                    .map(|s| Step {
                        keyword: s.keyword.clone(),
                        text: substitute(&s.text, header, row),
                        docstring: s.docstring.as_ref().map(|d| substitute(d, header, row)),
                        table: s.table.as_ref().map(|t| {
                            t.iter()
                                .map(|r| r.iter().map(|c| substitute(c, header, row)).collect())
                                .collect()
                        }),
                        line: s.line,
                    })
                    .collect();
                out.push(Scenario {
                    display_name: substitute(&name, header, row),
                    name: name.clone(),
                    example: Some(index),
                    tags: tags.clone(),
                    steps,
                    line,
                });
                index += 1;
            }
        }
    }
    Ok(())
}

/// Parses a feature file.
pub fn parse_feature(text: &str) -> Result<Feature, String> {
    let mut feature = Feature::default();
    let mut background: Vec<Step> = Vec::new();
    let mut block = Block::None;
    let mut pending_tags: Vec<String> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let line = raw.trim();
        let lineno = i + 1;
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('@') {
            pending_tags.extend(line.split_whitespace().map(|t| t.to_string()));
            continue;
        }
        if let Some(rest) = line.strip_prefix("Feature:") {
            feature.name = rest.trim().to_string();
            feature.tags = std::mem::take(&mut pending_tags);
            continue;
        }
        if line.starts_with("Background:") {
            finish(
                std::mem::replace(&mut block, Block::Background),
                &background,
                &mut feature.scenarios,
            )?;
            continue;
        }
        let outline_name = line
            .strip_prefix("Scenario Outline:")
            .or_else(|| line.strip_prefix("Scenario Template:"));
        let plain_name = line
            .strip_prefix("Scenario:")
            .or_else(|| line.strip_prefix("Example:"));
        if outline_name.is_some() || plain_name.is_some() {
            let outline = outline_name.is_some();
            let name = outline_name.or(plain_name).unwrap_or_default().trim();
            let mut tags = feature.tags.clone();
            tags.append(&mut pending_tags);
            let new = Block::Scenario {
                name: name.to_string(),
                tags,
                line: lineno,
                outline,
                steps: Vec::new(),
                examples: Vec::new(),
                in_examples: false,
            };
            finish(
                std::mem::replace(&mut block, new),
                &background,
                &mut feature.scenarios,
            )?;
            continue;
        }
        if line.starts_with("Examples:") || line.starts_with("Scenarios:") {
            pending_tags.clear();
            match &mut block {
                Block::Scenario {
                    examples,
                    in_examples,
                    ..
                } => {
                    examples.push(Vec::new());
                    *in_examples = true;
                }
                _ => return Err(format!("line {lineno}: Examples outside a scenario")),
            }
            continue;
        }
        if line.starts_with('|') {
            let cells = split_row(line);
            match &mut block {
                Block::Scenario {
                    examples,
                    in_examples: true,
                    ..
                } => examples.last_mut().expect("examples block").push(cells),
                Block::Scenario { steps, .. } => attach_row(steps, cells, lineno)?,
                Block::Background => attach_row(&mut background, cells, lineno)?,
                Block::None => return Err(format!("line {lineno}: table outside a scenario")),
            }
            continue;
        }
        if line.starts_with("\"\"\"") || line.starts_with("```") {
            let fence = &line[..3];
            let indent = raw.len() - raw.trim_start().len();
            let mut body = Vec::new();
            loop {
                let Some(l) = lines.get(i) else {
                    return Err(format!("line {lineno}: unterminated doc string"));
                };
                i += 1;
                if l.trim() == fence {
                    break;
                }
                let strip = l.len() - l.trim_start().len();
                body.push(&l[strip.min(indent)..]);
            }
            let doc = body.join("\n");
            let steps = match &mut block {
                Block::Scenario { steps, .. } => steps,
                Block::Background => &mut background,
                Block::None => return Err(format!("line {lineno}: doc string outside a scenario")),
            };
            match steps.last_mut() {
                Some(s) => s.docstring = Some(doc),
                None => return Err(format!("line {lineno}: doc string without a step")),
            }
            continue;
        }
        if let Some(kw) = STEP_KEYWORDS
            .iter()
            .find(|k| line.starts_with(*k) && line[k.len()..].starts_with(' '))
        {
            let step = Step {
                keyword: kw.to_string(),
                text: line[kw.len()..].trim().to_string(),
                docstring: None,
                table: None,
                line: lineno,
            };
            match &mut block {
                Block::Scenario {
                    steps, in_examples, ..
                } => {
                    if *in_examples {
                        return Err(format!("line {lineno}: step after Examples"));
                    }
                    steps.push(step)
                }
                Block::Background => background.push(step),
                Block::None => return Err(format!("line {lineno}: step outside a scenario")),
            }
            continue;
        }
        // Free-form description lines (after Feature:/Scenario:) are ignored.
    }
    finish(block, &background, &mut feature.scenarios)?;
    Ok(feature)
}

fn attach_row(steps: &mut [Step], cells: Vec<String>, lineno: usize) -> Result<(), String> {
    match steps.last_mut() {
        Some(s) => {
            s.table.get_or_insert_with(Vec::new).push(cells);
            Ok(())
        }
        None => Err(format!("line {lineno}: table without a step")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"# comment
#encoding: utf-8

@featuretag
Feature: Demo - a demo
  Some description.

  Background:
    Given an empty graph

  Scenario: [1] Plain
    When executing query:
      """
      MATCH (n)
        RETURN n
      """
    Then the result should be, in any order:
      | n |
    And no side effects

  @ignore
  Scenario Outline: [2] Outline <what>
    And parameters are:
      | x | <val> |
    When executing query:
      """
      RETURN <val> AS v
      """
    Then the result should be, in any order:
      | v     |
      | <val> |

    Examples:
      | val | what |
      | 1   | one  |
      | 'a\|b' | two |

    Examples:
      | val | what |
      | 3   | three |
"#;

    #[test]
    fn parses_scenarios_and_outlines() {
        let f = parse_feature(SAMPLE).unwrap();
        assert_eq!(f.name, "Demo - a demo");
        assert_eq!(f.scenarios.len(), 4);
        let s = &f.scenarios[0];
        assert_eq!(s.name, "[1] Plain");
        assert_eq!(s.example, None);
        assert_eq!(s.tags, vec!["@featuretag"]);
        assert_eq!(s.steps.len(), 4, "background step included");
        assert_eq!(s.steps[0].text, "an empty graph");
        assert_eq!(s.steps[1].text, "executing query:");
        assert_eq!(
            s.steps[1].docstring.as_deref(),
            Some("MATCH (n)\n  RETURN n")
        );
        assert_eq!(s.steps[2].table, Some(vec![vec!["n".to_string()]]));

        let o = &f.scenarios[2];
        assert_eq!(o.name, "[2] Outline <what>");
        assert_eq!(o.display_name, "[2] Outline two");
        assert_eq!(o.example, Some(1));
        assert!(o.tags.contains(&"@ignore".to_string()));
        assert_eq!(o.steps[1].table.as_ref().unwrap()[0][1], "'a|b'");
        assert_eq!(o.steps[2].docstring.as_deref(), Some("RETURN 'a|b' AS v"));
        assert_eq!(f.scenarios[3].example, Some(2));
        assert_eq!(f.scenarios[3].display_name, "[2] Outline three");
    }

    #[test]
    fn splits_rows() {
        assert_eq!(split_row("| a | b  |"), vec!["a", "b"]);
        assert_eq!(split_row("|  |"), vec![""]);
        assert_eq!(split_row(r"| 'x\|y' | \\ |"), vec!["'x|y'", "\\"]);
    }

    #[test]
    fn rejects_unterminated_docstring() {
        let err = parse_feature("Feature: x\n Scenario: y\n  When q:\n  \"\"\"\n  RETURN 1\n");
        assert!(err.is_err());
    }
}
