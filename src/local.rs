//! Work-group sizes given by the user: one for every kernel (`--local 64,4` on the command
//! line, `local=[64, 4]` from Python), and one for a kernel of a program with several, by its
//! name (`--local sepblur_0_h:16,16`, repeatable, `local={"sepblur_0_h": [16, 16]}`); the plain
//! one is then the size of the kernels not named.

use crate::error::Error;
use std::collections::BTreeMap;

type R<T> = Result<T, Error>;

/// The work-group sizes given.
#[derive(Clone, Debug, Default)]
pub struct Locals {
    /// The size of every kernel not named in `by_kernel`.
    pub all: Option<Vec<i64>>,
    /// Sizes by kernel name.
    pub by_kernel: BTreeMap<String, Vec<i64>>,
}

/// Parses one work-group size, `64,4,1`.
pub fn parse_size(s: &str) -> R<Vec<i64>> {
    let v: Result<Vec<i64>, _> = s.split(',').map(|x| x.trim().parse::<i64>()).collect();
    match v {
        Ok(v) if !v.is_empty() && v.len() <= 3 && v.iter().all(|x| *x > 0) => Ok(v),
        _ => Err(Error::Usage(format!("--local expects 1 to 3 positive numbers like 64,4,1, got `{s}`"))),
    }
}

impl Locals {
    /// Parses the `--local` flags: `X,Y,Z` or `KERNEL:X,Y,Z`, each size given once.
    pub fn parse(flags: &[String]) -> R<Locals> {
        let mut out = Locals::default();
        for f in flags {
            let twice = match f.split_once(':') {
                Some((kernel, size)) => out
                    .by_kernel
                    .insert(kernel.trim().to_string(), parse_size(size)?)
                    .map(|_| format!("kernel `{}` is given a work-group size twice", kernel.trim())),
                None => {
                    out.all.replace(parse_size(f)?).map(|_| "a work-group size for every kernel is given twice".into())
                }
            };
            if let Some(why) = twice {
                return Err(Error::Usage(format!("--local `{f}`: {why}")));
            }
        }
        Ok(out)
    }

    /// Refuses sizes named for kernels the program does not have.
    pub fn check_kernels(&self, kernels: &[&str]) -> R<()> {
        match self.by_kernel.keys().find(|k| !kernels.contains(&k.as_str())) {
            Some(k) => Err(Error::Usage(format!(
                "a work-group size is given for kernel `{k}`, which the program does not have (its kernels: {})",
                kernels.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// The work-group size of kernel `name`: its own, else the plain one, else none.
    pub fn of(&self, name: &str) -> Option<Vec<i64>> {
        self.by_kernel.get(name).or(self.all.as_ref()).cloned()
    }

    /// Whether kernel `name`'s size is the plain one, given for every kernel of several, which
    /// a kernel in one work item does not take.
    pub fn shared(&self, name: &str) -> bool {
        !self.by_kernel.contains_key(name)
    }

    /// Refuses a plain size (of more than one work item) that no kernel takes: `taken` says
    /// whether a kernel it is for has a parallel map.
    pub fn check_taken(&self, taken: bool) -> R<()> {
        match &self.all {
            Some(all) if !taken && all.iter().product::<i64>() > 1 => Err(Error::Rejected(format!(
                "error: the work-group size {all:?} given for every kernel fits none: each runs in one work item (no parallel map)"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(f: &[&str]) -> Vec<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_and_per_kernel_sizes() {
        let l = Locals::parse(&flags(&["8,8", "h: 16, 2"])).unwrap();
        assert_eq!(l.of("h"), Some(vec![16, 2]));
        assert_eq!(l.of("out"), Some(vec![8, 8]));
        assert!(l.check_kernels(&["h", "out"]).is_ok());
        assert!(l.check_kernels(&["out"]).is_err());
        assert_eq!(Locals::parse(&[]).unwrap().of("h"), None);
    }

    #[test]
    fn bad_sizes_are_usage_errors() {
        for bad in [&["0,4"][..], &["1,2,3,4"], &["h:"], &["h:x"], &["4", "8"], &["h:4", "h:8"]] {
            assert!(matches!(Locals::parse(&flags(bad)), Err(Error::Usage(_))), "{bad:?}");
        }
    }
}
