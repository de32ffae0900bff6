//! `ptec dump`: a method's IR, as text or as Graphviz DOT.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use ptec_compiler::file::ProgramFile;

use crate::instance::CompileArgs;
use crate::method::select_method;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DumpFormat {
    Text,
    Dot,
}

/// Prints the imported IR, or with `after`, the IR after that pass (`all`:
/// after each pass, each preceded by a `; after PASS` line); with `bounds`,
/// a text graph is followed by what it proves of its convolutions' and
/// addmms' inputs.
pub fn run(
    path: &Path,
    data: &[PathBuf],
    method: Option<&str>,
    (format, bounds): (DumpFormat, bool),
    after: Option<&str>,
    passes: &CompileArgs,
) -> anyhow::Result<()> {
    let program = ProgramFile::open(path, data)?;
    let file = program.file();
    let method = select_method(file.program(), method)?;
    let render = |graph: &ptec_ir::Graph<'_>| match (format, bounds) {
        (DumpFormat::Text, false) => ptec_ir::to_text(graph),
        (DumpFormat::Text, true) => ptec_ir::to_text(graph) + &convolution_bounds(graph),
        (DumpFormat::Dot, _) => ptec_ir::to_dot(graph),
    };
    let Some(after) = after else {
        let graph = ptec_import::import_method(method)?;
        ptec_ir::verify_unplanned(&graph)?;
        print!("{}", render(&graph));
        return Ok(());
    };
    if after != "all" && !ptec_passes::names().contains(&after) {
        anyhow::bail!(
            "unknown pass {after:?} (the passes are: {})",
            ptec_passes::names().join(", ")
        );
    }
    let mut shown = false;
    let optimized = ptec_compiler::optimize(method, &passes.options().passes, |pass, graph| {
        if after == "all" || after == pass.name {
            if after == "all" {
                println!("; after {}", pass.name);
            }
            print!("{}", render(graph));
            shown = true;
        }
    })?;
    passes.report(&optimized.reports);
    if !shown {
        anyhow::bail!(
            "pass {after} did not run (it is disabled, or the pipeline stopped before it)"
        );
    }
    Ok(())
}

/// One comment line per convolution and addmm: the bounds the graph proves
/// of its input (`ptec_ir::value_bounds`), as the integer kernels ask for
/// them.
fn convolution_bounds(graph: &ptec_ir::Graph<'_>) -> String {
    let mut lines = String::new();
    for &node in graph.schedule() {
        let (kind, input) = match graph.op(node) {
            ptec_ir::Op::Convolution(conv) => ("convolution", conv.input),
            ptec_ir::Op::Addmm(addmm) => ("addmm", addmm.a),
            _ => continue,
        };
        let output = graph.node(node).outputs()[0];
        let bounds = ptec_ir::value_bounds(graph, input);
        let what = match bounds.integers() {
            Some((low, high)) => format!("integers in [{low}, {high}]"),
            None if bounds == ptec_ir::Bounds::UNKNOWN => "nothing proven".to_string(),
            None => format!(
                "in [{:?}, {:?}]{}",
                bounds.low,
                bounds.high,
                if bounds.integral { ", integral" } else { "" }
            ),
        };
        lines += &format!("; bounds: {kind} {output} reads {input}: {what}\n");
    }
    lines
}
