//! `ptec operators`: every operator key ptec imports (ATen kernel keys of
//! programs, XNNPACK node types, Vulkan operator names) and, per back end,
//! whether it runs it or why not. The JSON form is a stable interface, and
//! the README's operator table is generated from it.

use std::collections::BTreeMap;

use ptec_compiler::{Backend, OperatorSupport};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Report {
    operators: Vec<Entry>,
}

#[derive(Debug, Serialize)]
struct Entry {
    key: String,
    /// `program`, `xnnpack` or `vulkan`.
    source: &'static str,
    supported: Vec<String>,
    refused: BTreeMap<String, String>,
}

/// Prints the table, for one back end or all.
pub fn run(backend: Option<Backend>, json: bool) -> anyhow::Result<()> {
    let shown = |candidate: &Backend| backend.is_none_or(|backend| backend == *candidate);
    let entries: Vec<Entry> = ptec_compiler::operators()
        .into_iter()
        .map(
            |OperatorSupport {
                 key,
                 source,
                 supported,
                 refused,
             }| Entry {
                key,
                source: source.name(),
                supported: supported
                    .iter()
                    .filter(|backend| shown(backend))
                    .map(ToString::to_string)
                    .collect(),
                refused: refused
                    .into_iter()
                    .filter(|(backend, _)| shown(backend))
                    .map(|(backend, why)| (backend.to_string(), why))
                    .collect(),
            },
        )
        .collect();
    if json {
        println!("{}", serde_json::to_string(&Report { operators: entries })?);
        return Ok(());
    }
    for entry in &entries {
        let reasons: Vec<&String> = entry.refused.values().collect();
        let verdict = if entry.supported.is_empty() && reasons.windows(2).all(|w| w[0] == w[1]) {
            format!(
                "refused: {}",
                reasons.first().map_or("", |why| why.as_str())
            )
        } else {
            let mut verdicts = entry.supported.clone();
            verdicts.extend(Backend::ALL.iter().filter_map(|backend| {
                let why = entry.refused.get(backend.name())?;
                Some(format!("not {backend} ({why})"))
            }));
            verdicts.join(", ")
        };
        println!("{:<8} {:<52} {verdict}", entry.source, entry.key);
    }
    let supported = entries
        .iter()
        .filter(|entry| entry.refused.is_empty())
        .count();
    println!(
        "{} operator keys, {supported} supported by every back end shown",
        entries.len()
    );
    Ok(())
}
