//! The `ptec` command line: the face of the compiler.
//!
//! Exit codes: 0 success, 1 invalid input (the message on stderr starts with
//! `error:`), 2 usage (clap's own).

mod bench;
mod bundled_test;
mod compile;
mod dump;
mod inspect;
mod instance;
mod listing;
mod method;
mod npy;
mod operators;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use instance::{Backend, CompileArgs};
use ptec_compiler::emit::Emit;

#[derive(Debug, Parser)]
#[command(
    name = "ptec",
    version,
    about = "An ahead-of-time compiler for ExecuTorch programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what a .pte or .bpte file holds: methods, their inputs and outputs,
    /// operators, delegates, planned memory and test suites.
    Inspect {
        file: PathBuf,
        #[command(flatten)]
        data: DataArgs,
        /// Print a machine-readable JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a method's IR.
    Dump {
        file: PathBuf,
        #[command(flatten)]
        data: DataArgs,
        /// The method (default: the first).
        #[arg(long)]
        method: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: dump::DumpFormat,
        /// Print the IR after this pass (`all`: after every pass) instead of
        /// the imported IR.
        #[arg(long, value_name = "PASS")]
        after: Option<String>,
        /// After a text graph, what the graph proves of each convolution's
        /// and addmm's input: integers in a range (which the integer
        /// kernels need), or nothing.
        #[arg(long)]
        bounds: bool,
        #[command(flatten)]
        passes: CompileArgs,
    },
    /// List the optimizer's passes, in pipeline order.
    Passes,
    /// List every operator key ptec imports (ATen kernels of programs,
    /// XNNPACK node types, Vulkan operators) and, per back end, whether it
    /// runs it or why not.
    Operators {
        /// Only this back end: jit, aot or vulkan.
        #[arg(long)]
        backend: Option<Backend>,
        /// Print `{"operators":[{"key","source","supported","refused"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Compile a method and run it once on .npy inputs (default: a bundled
    /// program's first test case).
    Run {
        file: PathBuf,
        #[command(flatten)]
        data: DataArgs,
        #[arg(long)]
        method: Option<String>,
        /// An input, as a .npy file; one per method input, in order.
        #[arg(long = "input")]
        inputs: Vec<PathBuf>,
        /// Write each output to DIR/output_N.npy instead of printing it
        /// (with --steps: DIR/<step>/out_N.npy).
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// Run the method once per sub-folder of DIR, in lexical order, on
        /// one instance (state such as a KV cache carries over), each
        /// sub-folder holding the inputs as in_0.npy, in_1.npy, ...
        #[arg(long, value_name = "DIR")]
        steps: Option<PathBuf>,
        /// jit (compiled in-process), aot (a shared object called through
        /// its C ABI) or vulkan (compute shaders on a Vulkan device).
        #[arg(long, default_value_t = Backend::Jit)]
        backend: Backend,
        #[command(flatten)]
        passes: CompileArgs,
    },
    /// Run every test case of bundled programs and compare the outputs with
    /// the expected ones. Exits 0 only if every case of every file passes.
    Test {
        /// Bundled programs (`.bpte`), or directories of them (each of its
        /// `.bpte` files, by name).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// (Every file is read with these data files.)
        #[command(flatten)]
        data: DataArgs,
        /// jit (compiled in-process), aot (a shared object called through
        /// its C ABI) or vulkan (compute shaders on a Vulkan device).
        #[arg(long, default_value_t = Backend::Jit)]
        backend: Backend,
        /// Relative tolerance for floats.
        #[arg(long, default_value_t = 1e-3)]
        rtol: f64,
        /// Absolute tolerance for floats.
        #[arg(long, default_value_t = 1e-5)]
        atol: f64,
        /// Print one JSON object per file.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        passes: CompileArgs,
    },
    /// Compile a program ahead of time: a shared object or object file with
    /// a C ABI (and its C header), the generated machine code, or the
    /// optimized IR. The weights of --data files are embedded in the
    /// library, as the program's own constants are: the library needs no
    /// other file at run time.
    Compile {
        file: PathBuf,
        #[command(flatten)]
        data: DataArgs,
        /// The output file (default: <file stem>.so or .o in the current
        /// directory; standard output for asm and ir, as `-` names it).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// so (a shared object needing only libc and libm), obj (a
        /// relocatable object), asm (the machine code, disassembled per
        /// function), ir (the optimized IR) or spirv (a directory of Vulkan
        /// compute shaders, their constants and a manifest).
        #[arg(long, default_value_t = Emit::So)]
        emit: Emit,
        /// A target triple, such as aarch64-unknown-linux-gnu (default: this
        /// machine, with every extension its CPU has).
        #[arg(long)]
        target: Option<String>,
        /// Compile only this method (default: all).
        #[arg(long)]
        method: Option<String>,
        /// Also write the C header for the library.
        #[arg(long, value_name = "FILE")]
        header: Option<PathBuf>,
        /// The prefix of the exported functions (<prefix>_create, ...).
        #[arg(long, default_value = "ptec")]
        prefix: String,
        /// The C compiler driver that links shared objects (default: cc, or
        /// <arch>-linux-gnu-gcc for another architecture).
        #[arg(long)]
        linker: Option<String>,
        #[command(flatten)]
        passes: CompileArgs,
    },
    /// Time a compiled method on its first test case's inputs (or given
    /// .npy inputs): median, min and max over the runs.
    Bench {
        file: PathBuf,
        #[command(flatten)]
        data: DataArgs,
        #[arg(long)]
        method: Option<String>,
        #[arg(long = "input")]
        inputs: Vec<PathBuf>,
        #[arg(long, default_value_t = 20)]
        iters: usize,
        #[arg(long, default_value_t = 3)]
        warmup: usize,
        /// jit (compiled in-process), aot (a shared object called through
        /// its C ABI) or vulkan (compute shaders on a Vulkan device).
        #[arg(long, default_value_t = Backend::Jit)]
        backend: Backend,
        #[arg(long)]
        json: bool,
        /// Also print the time of each kernel, summed over the timed runs
        /// (the JIT's code, or each dispatch on the Vulkan device by its
        /// timestamps).
        #[arg(long)]
        profile: bool,
        #[command(flatten)]
        passes: CompileArgs,
    },
}

/// The data files (`.ptd`) of a program that keeps weights outside it.
#[derive(Debug, clap::Args)]
struct DataArgs {
    /// A .ptd data file holding weights the program keeps outside it
    /// (program-data separation); repeat for several files.
    #[arg(long = "data", value_name = "FILE.ptd")]
    data_files: Vec<PathBuf>,
}

/// Restores the default action of SIGPIPE, which Rust programs ignore, so
/// that a reader closing the pipe (`ptec inspect FILE | head`) ends ptec
/// quietly, as it ends any Unix tool, instead of making `println!` panic.
fn restore_sigpipe() {
    // SAFETY: called first in `main`, before any thread exists, with a
    // valid signal number and disposition.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    // Ok(false): the command ran but found failures (failing tests).
    let result = match cli.command {
        Command::Inspect { file, data, json } => {
            inspect::run(&file, &data.data_files, json).map(|()| true)
        }
        Command::Dump {
            file,
            data,
            method,
            format,
            after,
            bounds,
            passes,
        } => dump::run(
            &file,
            &data.data_files,
            method.as_deref(),
            (format, bounds),
            after.as_deref(),
            &passes,
        )
        .map(|()| true),
        Command::Passes => {
            let width = ptec_passes::PIPELINE
                .iter()
                .map(|pass| pass.name.len())
                .max()
                .unwrap_or_default();
            for pass in ptec_passes::PIPELINE {
                println!("{:<width$}  {}", pass.name, pass.description);
            }
            Ok(true)
        }
        Command::Operators { backend, json } => operators::run(backend, json).map(|()| true),
        Command::Run {
            file,
            data,
            method,
            inputs,
            output_dir,
            steps,
            backend,
            passes,
        } => {
            let options = run::RunOptions {
                method: method.as_deref(),
                inputs: &inputs,
                output_dir: output_dir.as_deref(),
                steps: steps.as_deref(),
                backend,
                passes: &passes,
            };
            run::run(&file, &data.data_files, options).map(|()| true)
        }
        Command::Compile {
            file,
            data,
            output,
            emit,
            target,
            method,
            header,
            prefix,
            linker,
            passes,
        } => {
            let options = passes.options();
            let emit = ptec_compiler::emit::EmitOptions {
                output: output.as_deref(),
                emit,
                target: target.as_deref(),
                method: method.as_deref(),
                header: header.as_deref(),
                prefix: &prefix,
                linker: linker.as_deref(),
                options: &options,
                data: &data.data_files,
            };
            compile::run(&file, &emit, &passes).map(|()| true)
        }
        Command::Bench {
            file,
            data,
            method,
            inputs,
            iters,
            warmup,
            backend,
            json,
            profile,
            passes,
        } => {
            let options = bench::BenchOptions {
                method: method.as_deref(),
                inputs: &inputs,
                iters,
                warmup,
                backend,
                json,
                profile,
                passes: &passes,
            };
            bench::run(&file, &data.data_files, options).map(|()| true)
        }
        Command::Test {
            files,
            data,
            backend,
            rtol,
            atol,
            json,
            passes,
        } => {
            let tolerance = ptec_compiler::bundled::Tolerance { rtol, atol };
            bundled_test::run(&files, &data.data_files, backend, tolerance, json, &passes)
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {}", ptec_compiler::full_message(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// clap checks a command line's definition (unique argument names, ...)
    /// only in debug builds, when it is first parsed; this checks it in
    /// every build.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
