//! Links a relocatable object into a shared object with the system's C
//! compiler driver, which knows where the target's libc and start files are.
//! The library needs libc and, when a kernel calls into it, libm.

use std::path::Path;
use std::process::Command;

use target_lexicon::{Architecture, Triple};

use crate::error::CodegenError;

/// The C compiler driver that links for a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linker {
    pub command: String,
}

impl Linker {
    /// `cc` for the host; for another Linux target, Debian's cross compiler
    /// (`aarch64-linux-gnu-gcc` for aarch64).
    pub fn for_target(target: Option<&Triple>) -> Linker {
        let host = Triple::host();
        let command = match target {
            Some(triple) if triple.architecture != host.architecture => {
                let architecture = match triple.architecture {
                    Architecture::Aarch64(_) => "aarch64".to_string(),
                    other => other.to_string(),
                };
                format!("{architecture}-linux-gnu-gcc")
            }
            _ => "cc".to_string(),
        };
        Linker { command }
    }
}

/// Links `object` into the shared object `output`.
pub fn link_shared_object(
    linker: &Linker,
    object: &Path,
    output: &Path,
) -> Result<(), CodegenError> {
    let failure = |message: String| CodegenError::Link {
        linker: linker.command.clone(),
        message,
    };
    let result = Command::new(&linker.command)
        .arg("-shared")
        .arg("-o")
        .arg(output)
        .arg(object)
        .args([
            "-Wl,-z,noexecstack",
            "-Wl,-z,defs",
            "-Wl,--as-needed",
            "-lm",
        ])
        .output()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => failure(
                "not found; install a C toolchain for the target (Debian: gcc, or \
                 gcc-aarch64-linux-gnu for aarch64), pass --linker, or emit an object with \
                 --emit obj"
                    .to_string(),
            ),
            _ => failure(error.to_string()),
        })?;
    if !result.status.success() {
        return Err(failure(format!(
            "{}: {}",
            result.status,
            String::from_utf8_lossy(&result.stderr).trim()
        )));
    }
    Ok(())
}
