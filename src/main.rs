//! The `ptec` command line: the face of the compiler.
//!
//! Exit codes: 0 success, 1 invalid input (the message on stderr starts with
//! `error:`), 2 usage (clap's own).

mod dump;
mod inspect;
mod method;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
        /// Print a machine-readable JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a method's IR.
    Dump {
        file: PathBuf,
        /// The method (default: the first).
        #[arg(long)]
        method: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: dump::DumpFormat,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { file, json } => inspect::run(&file, json),
        Command::Dump {
            file,
            method,
            format,
        } => dump::run(&file, method.as_deref(), format),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
