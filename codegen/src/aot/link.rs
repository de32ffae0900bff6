//! Links a relocatable object into a shared object with the system's C
//! compiler driver, which knows where the target's libc and start files are,
//! together with the thread pool's C source (`ptec_runtime::pool`), which it
//! compiles for the target. The library needs libc (with pthreads) and, when
//! a kernel calls into it, libm.

use std::path::{Path, PathBuf};
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

/// Writes the thread pool's C source beside `object` (`NAME.o` gets
/// `NAME_pool.c`), which an object needs linked with it, and returns its
/// path.
pub fn write_pool_source(object: &Path) -> std::io::Result<PathBuf> {
    let stem = object.file_stem().unwrap_or_default().to_string_lossy();
    let path = object.with_file_name(format!("{stem}_pool.c"));
    std::fs::write(&path, ptec_runtime::pool::SOURCE)?;
    Ok(path)
}

/// Links `object` with the thread pool into the shared object `output`.
pub fn link_shared_object(
    linker: &Linker,
    object: &Path,
    output: &Path,
) -> Result<(), CodegenError> {
    let failure = |message: String| CodegenError::Link {
        linker: linker.command.clone(),
        message,
    };
    let pool = write_pool_source(object)
        .map_err(|error| failure(format!("writing the thread pool's source: {error}")))?;
    let result = Command::new(&linker.command)
        .arg("-shared")
        .arg("-o")
        .arg(output)
        .arg(object)
        .arg(&pool)
        .args([
            "-O2",
            "-fPIC",
            "-pthread",
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
