//! What a file holds, as a report: text for a person, or JSON for a program
//! (`ptec inspect --json`, the Python package's `ptec.inspect`). The JSON
//! field names are a stable interface.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ptec_codegen::{Place, VulkanLimits};
use ptec_frontend::{
    ExecutorchFile, Instruction, Method, Program, Tensor, TestSuite, Value, ValueIndex,
};
use serde::Serialize;

use crate::error::Error;
use crate::file::ProgramFile;
use crate::pipeline::optimize;

/// Everything `ptec inspect` says of a file.
#[derive(Debug, Serialize)]
pub struct Report {
    file: String,
    /// `program` or `bundled_program`.
    format: &'static str,
    bytes: usize,
    methods: Vec<MethodReport>,
    test_suites: Vec<SuiteReport>,
    segments: Vec<SegmentReport>,
    constant_bytes: u64,
    named_data: NamedDataReport,
}

#[derive(Debug, Serialize)]
struct MethodReport {
    name: String,
    inputs: Vec<IoReport>,
    outputs: Vec<IoReport>,
    /// Operator key (`aten::add.out`) to the number of KernelCalls of it.
    operators: BTreeMap<String, usize>,
    /// One entry per DelegateCall instruction, in order.
    delegates: Vec<DelegateReport>,
    non_const_buffer_sizes: Vec<u64>,
    values: usize,
    instructions: InstructionCounts,
    /// The arena the file's own plan needs (`non_const_buffer_sizes` past
    /// index 0).
    executorch_planned_bytes: u64,
    /// What ptec makes of the method; null when it cannot compile it.
    #[serde(flatten)]
    compiled: Option<CompiledReport>,
    /// Why ptec cannot compile the method, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    compile_error: Option<String>,
}

/// The method through ptec's import and optimizer.
#[derive(Debug, Serialize)]
struct CompiledReport {
    /// IR ops before the passes.
    ops: usize,
    /// Kernels after the passes.
    kernels: usize,
    /// ptec's arena after memory planning.
    planned_bytes: u64,
    /// The most bytes alive at once in ptec's schedule: a lower bound for
    /// any plan of it.
    live_peak_bytes: u64,
    /// Where `--backend vulkan` runs the kernels; null when it refuses the
    /// method, and `vulkan_error` says why.
    vulkan: Option<VulkanReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vulkan_error: Option<String>,
}

/// Where the Vulkan back end runs a method's kernels.
#[derive(Debug, Serialize)]
struct VulkanReport {
    /// Kernels a compute shader runs.
    device_kernels: usize,
    /// The kernels the CPU runs between the device's, in schedule order.
    cpu_kernels: Vec<CpuKernelReport>,
}

#[derive(Debug, Serialize)]
struct CpuKernelReport {
    node: String,
    op: String,
    /// Why no shader runs it.
    reason: String,
}

impl CompiledReport {
    fn new(method: &Method<'_>) -> Result<Self, Error> {
        let optimized = optimize(method, &ptec_passes::PassOptions::default(), |_, _| {})?;
        let graph = &optimized.graph;
        let (vulkan, vulkan_error) =
            match ptec_codegen::vulkan_placement(graph, &VulkanLimits::DEFAULT) {
                Ok(placed) => {
                    let (device, cpu): (Vec<_>, Vec<_>) = placed
                        .into_iter()
                        .partition(|(_, place)| *place == Place::Device);
                    let cpu_kernels = cpu
                        .into_iter()
                        .filter_map(|(node, place)| match place {
                            Place::Cpu(reason) => Some(CpuKernelReport {
                                node: node.to_string(),
                                op: graph.node(node).op().name().to_string(),
                                reason,
                            }),
                            Place::Device => None,
                        })
                        .collect();
                    let report = VulkanReport {
                        device_kernels: device.len(),
                        cpu_kernels,
                    };
                    (Some(report), None)
                }
                Err(error) => (None, Some(error.to_string())),
            };
        Ok(CompiledReport {
            ops: optimized.imported_kernels,
            kernels: graph.kernel_count(),
            planned_bytes: graph.arena_size(),
            live_peak_bytes: ptec_passes::live_peak(graph),
            vulkan,
            vulkan_error,
        })
    }
}

/// A method input or output.
#[derive(Debug, Serialize)]
struct IoReport {
    /// The value's kind: `Tensor`, `Int`, ...
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sizes: Option<Vec<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dim_order: Option<Vec<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamism: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct DelegateReport {
    id: String,
    /// Nodes of the delegated graph; null for a backend ptec cannot read.
    nodes: Option<usize>,
    constant_bytes: u64,
    /// Node kind to count.
    node_kinds: BTreeMap<String, usize>,
}

#[derive(Debug, Default, Serialize)]
struct InstructionCounts {
    kernel: usize,
    delegate: usize,
    #[serde(rename = "move")]
    move_: usize,
    jump_false: usize,
    free: usize,
}

#[derive(Debug, Serialize)]
struct SuiteReport {
    method: String,
    cases: usize,
}

#[derive(Debug, Serialize)]
struct SegmentReport {
    offset: u64,
    size: usize,
}

#[derive(Debug, Serialize)]
struct NamedDataReport {
    entries: usize,
    bytes: u64,
    /// How many data files (`.ptd`) the entries include.
    data_files: usize,
}

impl Report {
    /// Reads the file at `path`, with the data files at `data`, and reports
    /// on it.
    pub fn read(path: &Path, data: &[PathBuf]) -> Result<Self, Error> {
        let program = ProgramFile::open(path, data)?;
        Ok(Report::new(path, program.bytes().len(), program.file()))
    }

    fn new(path: &Path, bytes: usize, file: &ExecutorchFile<'_>) -> Self {
        let program: &Program<'_> = file.program();
        Report {
            file: path.display().to_string(),
            format: match file {
                ExecutorchFile::Program(_) => "program",
                ExecutorchFile::Bundled(_) => "bundled_program",
            },
            bytes,
            methods: program.methods.iter().map(MethodReport::new).collect(),
            test_suites: file.test_suites().iter().map(SuiteReport::new).collect(),
            segments: program
                .segments
                .iter()
                .map(|segment| SegmentReport {
                    offset: segment.offset,
                    size: segment.data.len(),
                })
                .collect(),
            constant_bytes: program.constant_bytes,
            named_data: NamedDataReport {
                entries: program.named_data.len(),
                bytes: program.named_data.total_bytes(),
                data_files: program.named_data.data_files(),
            },
        }
    }
}

impl MethodReport {
    fn new(method: &Method<'_>) -> Self {
        let mut operators = BTreeMap::new();
        let mut delegates = Vec::new();
        let mut instructions = InstructionCounts::default();
        for instruction in method.instructions() {
            match instruction {
                Instruction::Kernel { operator, .. } => {
                    instructions.kernel += 1;
                    *operators
                        .entry(method.operator(*operator).key())
                        .or_default() += 1;
                }
                Instruction::Delegate { delegate, .. } => {
                    instructions.delegate += 1;
                    let delegate = method.delegate(*delegate);
                    delegates.push(DelegateReport {
                        id: delegate.id.clone(),
                        nodes: delegate.payload.node_count(),
                        constant_bytes: delegate.payload.constant_bytes(),
                        node_kinds: delegate
                            .payload
                            .node_histogram()
                            .into_iter()
                            .map(|(kind, count)| (kind.to_string(), count))
                            .collect(),
                    });
                }
                Instruction::Move { .. } => instructions.move_ += 1,
                Instruction::JumpFalse { .. } => instructions.jump_false += 1,
                Instruction::Free { .. } => instructions.free += 1,
            }
        }
        let io = |indices: &[ValueIndex]| {
            indices
                .iter()
                .map(|&index| IoReport::new(method.value(index)))
                .collect()
        };
        let (compiled, compile_error) = match CompiledReport::new(method) {
            Ok(report) => (Some(report), None),
            Err(error) => (None, Some(error.full_message())),
        };
        MethodReport {
            name: method.name.clone(),
            inputs: io(&method.inputs),
            outputs: io(&method.outputs),
            operators,
            delegates,
            executorch_planned_bytes: method.non_const_buffer_sizes.iter().skip(1).sum(),
            non_const_buffer_sizes: method.non_const_buffer_sizes.clone(),
            values: method.values.len(),
            instructions,
            compiled,
            compile_error,
        }
    }
}

impl IoReport {
    fn new(value: &Value<'_>) -> Self {
        match value {
            Value::Tensor(tensor) => IoReport {
                kind: value.kind(),
                dtype: Some(tensor.dtype.name().to_string()),
                sizes: Some(tensor.sizes.clone()),
                dim_order: Some(tensor.dim_order.clone()),
                dynamism: Some(tensor.dynamism.name()),
            },
            _ => IoReport {
                kind: value.kind(),
                dtype: None,
                sizes: None,
                dim_order: None,
                dynamism: None,
            },
        }
    }

    fn to_text(&self) -> String {
        match (&self.dtype, &self.sizes, &self.dim_order, self.dynamism) {
            (Some(dtype), Some(sizes), Some(dim_order), Some(dynamism)) => {
                let mut text = format!("{dtype}{sizes:?}");
                if !Tensor::is_contiguous_order(dim_order) {
                    write!(text, " dim_order {dim_order:?}").ok();
                }
                if dynamism != "static" {
                    write!(text, " ({dynamism})").ok();
                }
                text
            }
            _ => self.kind.to_string(),
        }
    }
}

impl SuiteReport {
    fn new(suite: &TestSuite<'_>) -> Self {
        SuiteReport {
            method: suite.method.clone(),
            cases: suite.cases.len(),
        }
    }
}

impl Report {
    /// The report for a person.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let format = self.format.replace('_', " ");
        writeln!(
            out,
            "{}: {format}, {}",
            self.file,
            human_bytes(self.bytes as u64)
        )
        .ok();
        writeln!(
            out,
            "  {}; constants {}; named data {}, {}{}",
            plural(self.segments.len(), "segment"),
            human_bytes(self.constant_bytes),
            plural(self.named_data.entries, "entry"),
            human_bytes(self.named_data.bytes),
            match self.named_data.data_files {
                0 => String::new(),
                files => format!(" (with {})", plural(files, "data file")),
            }
        )
        .ok();
        for method in &self.methods {
            method.write_text(&mut out);
        }
        if !self.test_suites.is_empty() {
            writeln!(out, "\ntest suites").ok();
            for suite in &self.test_suites {
                writeln!(
                    out,
                    "  {:<24} {}",
                    suite.method,
                    plural(suite.cases, "case")
                )
                .ok();
            }
        }
        out
    }
}

impl MethodReport {
    fn write_text(&self, out: &mut String) {
        let counts = &self.instructions;
        writeln!(
            out,
            "\nmethod {}: {}, {}, {}, {}, {}, {}",
            self.name,
            plural(self.values, "value"),
            plural(counts.kernel, "kernel call"),
            plural(counts.delegate, "delegate call"),
            plural(counts.move_, "move"),
            plural(counts.jump_false, "jump"),
            plural(counts.free, "free"),
        )
        .ok();
        for (title, list) in [("inputs", &self.inputs), ("outputs", &self.outputs)] {
            writeln!(out, "  {title}").ok();
            for (index, io) in list.iter().enumerate() {
                writeln!(out, "    {index:<3} {}", io.to_text()).ok();
            }
        }
        if !self.operators.is_empty() {
            writeln!(out, "  operators").ok();
            let mut by_count: Vec<_> = self.operators.iter().collect();
            by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (key, count) in by_count {
                writeln!(out, "    {count:>5}  {key}").ok();
            }
        }
        if !self.delegates.is_empty() {
            writeln!(out, "  delegates").ok();
            for delegate in &self.delegates {
                let nodes = delegate
                    .nodes
                    .map_or("? nodes".to_string(), |nodes| format!("{nodes} nodes"));
                let kinds: Vec<String> = delegate
                    .node_kinds
                    .iter()
                    .map(|(kind, count)| format!("{kind}×{count}"))
                    .collect();
                writeln!(
                    out,
                    "    {:<16} {nodes:>10}, constants {:>9}  {}",
                    delegate.id,
                    human_bytes(delegate.constant_bytes),
                    kinds.join(" ")
                )
                .ok();
            }
        }
        let planned: Vec<String> = self
            .non_const_buffer_sizes
            .iter()
            .map(|&size| human_bytes(size))
            .collect();
        writeln!(
            out,
            "  planned memory (by memory id): [{}]",
            planned.join(", ")
        )
        .ok();
        match (&self.compiled, &self.compile_error) {
            (Some(compiled), _) => {
                writeln!(
                    out,
                    "  ptec: {} IR ops -> {} kernels; arena {} (the file plans {})",
                    compiled.ops,
                    compiled.kernels,
                    human_bytes(compiled.planned_bytes),
                    human_bytes(self.executorch_planned_bytes)
                )
                .ok();
                compiled.vulkan_text(out);
            }
            (None, Some(error)) => {
                writeln!(out, "  ptec cannot compile it yet: {error}").ok();
            }
            (None, None) => {}
        }
    }
}

impl CompiledReport {
    /// `--backend vulkan`'s placement: kernels on each side, and the CPU's
    /// by op and reason.
    fn vulkan_text(&self, out: &mut String) {
        let Some(vulkan) = &self.vulkan else {
            let error = self.vulkan_error.as_deref().unwrap_or_default();
            writeln!(out, "  vulkan: refused ({error})").ok();
            return;
        };
        writeln!(
            out,
            "  vulkan: {} on the device, {} on the CPU",
            plural(vulkan.device_kernels, "kernel"),
            vulkan.cpu_kernels.len()
        )
        .ok();
        let mut by_reason: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for kernel in &vulkan.cpu_kernels {
            *by_reason.entry((&kernel.op, &kernel.reason)).or_default() += 1;
        }
        for ((op, reason), count) in by_reason {
            writeln!(out, "    on the CPU: {count} {op} ({reason})").ok();
        }
    }
}

/// `1 segment`, `2 segments`, `3 entries`.
fn plural(count: usize, noun: &str) -> String {
    match (count, noun.strip_suffix('y')) {
        (1, _) => format!("{count} {noun}"),
        (_, Some(stem)) => format!("{count} {stem}ies"),
        _ => format!("{count} {noun}s"),
    }
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
