//! The bytes of a file on disk, memory-mapped so that weights are read in
//! place and never copied.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

/// A read-only mapping of a whole file.
#[derive(Debug)]
pub struct FileBytes {
    map: Mmap,
}

impl FileBytes {
    /// Maps the regular file at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let io_error = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_error)?;
        // Mapping a directory or a device fails with ENODEV ("No such
        // device"), which names neither.
        let metadata = file.metadata().map_err(io_error)?;
        if !metadata.is_file() {
            let kind = match metadata.is_dir() {
                true => "a directory",
                false => "a special file",
            };
            return Err(Error::NotAFile {
                path: path.to_path_buf(),
                kind,
            });
        }
        // SAFETY: the mapping is read-only and private to this process. Like
        // every reader of mapped files we rely on the file not being truncated
        // or rewritten by another process while it is mapped.
        let map = unsafe { Mmap::map(&file) }.map_err(io_error)?;
        Ok(FileBytes { map })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for FileBytes {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}
