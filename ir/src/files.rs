//! Reading the text files mapsat is given besides programs (device profiles, learned models,
//! tuning logs): regular files only (a FIFO would block the read, a device such as `/dev/zero`
//! never ends), of bounded size, refused before they are read into memory. And writing files
//! mapsat writes (reports, models, profiles, results): over a regular file only (a FIFO would
//! block the write, and `/dev/null` would lose it).

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// Refuses `path` unless it is a regular file of at most `max_bytes`.
pub fn check_regular(path: &Path, max_bytes: u64) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(())
}

/// The text of the regular file `path` of at most `max_bytes` ([`check_regular`]; a file that
/// grows past it while it is read is refused too).
pub fn read_text(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    check_regular(path, max_bytes)?;
    let mut text = String::new();
    std::fs::File::open(path)?.take(max_bytes + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(text)
}

/// Refuses to write to `path` when something that is not a regular file is there (a folder, a
/// FIFO, a device; a link is followed).
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(Error::new(ErrorKind::InvalidInput, "a folder, not a file")),
        Ok(meta) if !meta.is_file() => Err(Error::new(ErrorKind::InvalidInput, "not a regular file")),
        _ => Ok(()),
    }
}

/// Writes `contents` to `path`, created or replaced, after [`check_writable`].
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    check_writable(path)?;
    std::fs::write(path, contents)
}

/// Locks `file` for this process until it is closed (a kill included): `Ok(false)` when
/// another holds it.
pub fn try_lock(file: &std::fs::File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

fn too_large(max_bytes: u64) -> Error {
    Error::new(ErrorKind::InvalidData, format!("larger than {} MiB", max_bytes >> 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_folders_and_large_files_are_refused_before_reading() {
        assert!(read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string().contains("not a regular file"));
        let dir = std::env::temp_dir().join(format!("mapsat-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_text(&dir, 1 << 20).unwrap_err().to_string().contains("not a regular file"));
        let big = dir.join("big.txt");
        std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
        assert!(read_text(&big, 1 << 20).unwrap_err().to_string().contains("larger than 1 MiB"));
        std::fs::write(&big, "small").unwrap();
        assert_eq!(read_text(&big, 1 << 20).unwrap(), "small");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        if made {
            assert!(read_text(&fifo, 1 << 20).unwrap_err().to_string().contains("not a regular file"));
            assert!(write(&fifo, "x").unwrap_err().to_string().contains("not a regular file"));
        }
        assert!(write(Path::new("/dev/null"), "x").unwrap_err().to_string().contains("not a regular file"));
        assert!(write(&dir, "x").unwrap_err().to_string().contains("a folder, not a file"));
        write(&big, "written").unwrap();
        assert_eq!(read_text(&big, 1 << 20).unwrap(), "written");
        std::fs::remove_dir_all(&dir).ok();
    }
}
