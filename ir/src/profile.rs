//! Device profiles: the limits of a target device that constrain parallel mappings, read from
//! plain TOML files. Three ship with mapsat (`ir/profiles/*.toml`): `mali-g72-mp12` (the GPU of
//! Mogers et al., CC'22), `h100` and `pocl-cpu`; each figure in those files cites its source.
//! [`Profile::to_toml`] writes a profile back out, with comments naming the sources of its
//! figures (`mapsat devices --profile` reads them from a real OpenCL device).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The limits of one device.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name (`mali-g72-mp12`).
    pub name: String,
    /// What the device is.
    pub description: String,
    /// Number of compute units (cores, SMs).
    pub compute_units: u32,
    /// Largest number of work items in a work group.
    pub max_work_group_size: u64,
    /// Largest work-group extent in each of the three dimensions (exactly three values: serde
    /// read the first three of five and dropped the rest).
    #[serde(deserialize_with = "three")]
    pub max_work_item_sizes: [u64; 3],
    /// Number of NDRange dimensions (1 to 3).
    pub max_dims: u32,
    /// Local (shared) memory per work group, in bytes.
    pub local_mem_bytes: u64,
    /// Private memory per work item, in bytes (registers; approximate where spilling exists).
    pub private_mem_bytes: u64,
    /// Private memory of a whole work group (bytes per work item times work items), where the
    /// device has such a limit: pocl runs a work group on one worker thread and keeps its work
    /// items' private variables in that thread's stack (8 MiB by default), and a kernel beyond
    /// it crashes the process. `None`: no limit of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_group_bytes: Option<u64>,
    /// Largest number of work groups in each dimension, where the device has such a limit:
    /// CUDA's grid, 2^31 - 1 x 65,535 x 65,535 blocks. `None`: only the global size's range
    /// ([`Profile::address_bits`]), as in OpenCL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_groups: Option<[u64; 3]>,
    /// Preferred float vector width.
    pub vector_width: u32,
    /// Bits of the device's address space and `size_t` (OpenCL's `CL_DEVICE_ADDRESS_BITS`: 32
    /// or 64): a global size per dimension must fit. 64 when a profile does not say.
    #[serde(default = "address_bits_64")]
    pub address_bits: u32,
    /// Throughput figures for cost models (a `[rates]` table; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<Rates>,
}

/// The rates of a device, for cost models: measured by `mapsat calibrate` or taken from a data
/// sheet (a profile file cites the source of each figure).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    /// Single-precision arithmetic rate in GFLOP/s (a fused multiply-add counts as 2).
    pub gflops: f64,
    /// Global-memory bandwidth in GB/s (bytes read plus bytes written).
    pub bandwidth_gbs: f64,
    /// Time to launch a kernel that does nothing, in microseconds.
    pub launch_us: f64,
    /// Work items that execute in lock step: a warp, a sub-group, the vector lanes a CPU
    /// driver packs work items into.
    pub simd_width: u32,
    /// Bytes of one global-memory transaction (a cache line or sector).
    pub line_bytes: u32,
    /// Time to schedule one work group, beyond its work, in microseconds.
    #[serde(default)]
    pub group_us: f64,
    /// True when the work items of a lock-step group always run together whatever their code
    /// (GPU warps); false when a compiler packs work items into vector lanes only where their
    /// accesses allow it, and runs them one lane at a time otherwise (CPU drivers).
    #[serde(default = "yes")]
    pub lock_step: bool,
    /// Bytes of the cache that serves global memory (`CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`; a GPU's
    /// L2): a kernel whose global buffers fit in it moves its lines at `cache_bandwidth_gbs`,
    /// from memory only once. 0: unknown.
    #[serde(default)]
    pub cache_bytes: u64,
    /// Bandwidth of that cache in GB/s, for reads of a buffer that fits in it. 0: unknown.
    #[serde(default)]
    pub cache_bandwidth_gbs: f64,
    /// Bytes of the first-level data cache of one compute unit (a CPU core's L1d, a GPU SM's
    /// L1/shared): lines a work group (or work item) reads again while its working set fits in
    /// it move at `l1_bandwidth_gbs`. 0: unknown.
    #[serde(default)]
    pub l1_bytes: u64,
    /// Bandwidth of the first-level caches of all compute units together, in GB/s, counted in
    /// lines as the analytical model counts them. 0: unknown.
    #[serde(default)]
    pub l1_bandwidth_gbs: f64,
    /// Bytes of the second-level cache of one compute unit (a CPU core's L2; 0 where there is
    /// none of its own, as on GPUs whose L2 is `cache_bytes`). 0: unknown.
    #[serde(default)]
    pub l2_bytes: u64,
    /// Bandwidth of the second-level caches of all compute units together, in GB/s, counted as
    /// `l1_bandwidth_gbs`. 0: unknown.
    #[serde(default)]
    pub l2_bandwidth_gbs: f64,
    /// Work items one compute unit holds at once (a GPU SM's resident threads), for occupancy.
    /// 0: unknown, and no occupancy term.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cu_items: u64,
    /// 32-bit registers of one compute unit (an SM's register file), for occupancy. 0: unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cu_registers: u64,
    /// Local memory of one compute unit in bytes (an SM's shared memory), for occupancy. 0:
    /// unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cu_local_bytes: u64,
}

/// The largest work-group size, and work items in one dimension of it, a profile may give.
pub const MAX_WORK_ITEMS: u64 = 1 << 20;
/// The most compute units a profile may give.
pub const MAX_COMPUTE_UNITS: u64 = 1 << 20;

impl Rates {
    /// Refuses figures no device is near (each bound is 1,000 times or more beyond today's
    /// devices), which would only make the cost model's times absurd: rates (GFLOP/s, GB/s)
    /// from 10^-3 to 10^7, times up to a second, SIMD widths up to 1,024 lanes and cache lines
    /// up to 64 KiB.
    pub fn plausible(&self) -> Result<(), String> {
        let rates =
            [self.gflops, self.bandwidth_gbs, self.cache_bandwidth_gbs, self.l1_bandwidth_gbs, self.l2_bandwidth_gbs];
        if rates.iter().any(|&r| r != 0.0 && !(1e-3..=1e7).contains(&r)) {
            return Err("rates: gflops and the bandwidths (GB/s) must be from 0.001 to 10^7".into());
        }
        if self.launch_us > 1e6 || self.group_us > 1e6 {
            return Err("rates: launch_us and group_us must be at most 1000000 (a second)".into());
        }
        if self.simd_width > 1024 || self.line_bytes > 65536 {
            return Err("rates: simd_width must be at most 1024 and line_bytes at most 65536".into());
        }
        Ok(())
    }
}

/// The fields of [`Profile`] and [`Rates`] that are not serialized when absent (an `Option`'s
/// `None`, a 0 that means unknown): [`Profile::to_toml`] leaves them out.
const OPTIONAL_FIELDS: [&str; 5] = ["private_group_bytes", "max_groups", "cu_items", "cu_registers", "cu_local_bytes"];

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn yes() -> bool {
    true
}

fn address_bits_64() -> u32 {
    64
}

/// The fields of [`Rates`] in declaration order.
const RATE_FIELDS: [&str; 16] = [
    "gflops",
    "bandwidth_gbs",
    "launch_us",
    "simd_width",
    "line_bytes",
    "group_us",
    "lock_step",
    "cache_bytes",
    "cache_bandwidth_gbs",
    "l1_bytes",
    "l1_bandwidth_gbs",
    "l2_bytes",
    "l2_bandwidth_gbs",
    "cu_items",
    "cu_registers",
    "cu_local_bytes",
];

/// The fields of [`Profile`] in declaration order: the order [`Profile::to_toml`] writes them.
const FIELDS: [&str; 12] = [
    "name",
    "description",
    "compute_units",
    "max_work_group_size",
    "max_work_item_sizes",
    "max_dims",
    "local_mem_bytes",
    "private_mem_bytes",
    "private_group_bytes",
    "max_groups",
    "vector_width",
    "address_bits",
];

/// Why a profile could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Neither a built-in name nor a readable file.
    #[error("unknown device profile `{name}` (built-in profiles: {known})")]
    Unknown {
        /// What was asked for.
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
    /// The file could not be read.
    #[error("cannot read profile {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a valid profile.
    #[error("invalid profile {origin}: {message}")]
    Invalid {
        /// The file or built-in name.
        origin: String,
        /// What is wrong.
        message: String,
    },
}

const BUILTIN: [(&str, &str); 3] = [
    ("mali-g72-mp12", include_str!("../profiles/mali-g72-mp12.toml")),
    ("h100", include_str!("../profiles/h100.toml")),
    ("pocl-cpu", include_str!("../profiles/pocl-cpu.toml")),
];

impl Profile {
    /// Parses a profile from TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text)
            .map_err(|e| ProfileError::Invalid { origin: origin.to_string(), message: e.to_string() })?;
        p.validate(origin)?;
        Ok(p)
    }

    /// Checks the figures that every profile must satisfy (what [`Profile::from_toml`] checks
    /// after parsing); `origin` names the profile in errors.
    pub fn validate(&self, origin: &str) -> Result<(), ProfileError> {
        let invalid = |m: &str| ProfileError::Invalid { origin: origin.to_string(), message: m.to_string() };
        if !(1..=3).contains(&self.max_dims) {
            return Err(invalid("max_dims must be 1, 2 or 3"));
        }
        if self.max_work_group_size == 0 || self.max_work_item_sizes.contains(&0) {
            return Err(invalid("work-group sizes must be positive"));
        }
        // Plausibility: no device is near these (GPUs allow 1,024 work items per group, CPUs
        // 8,192), and larger figures would only slow the search of work-group sizes.
        if self.max_work_group_size > MAX_WORK_ITEMS || self.max_work_item_sizes.iter().any(|&m| m > MAX_WORK_ITEMS) {
            return Err(invalid(&format!("work-group sizes must be at most {MAX_WORK_ITEMS}")));
        }
        if u64::from(self.compute_units) > MAX_COMPUTE_UNITS {
            return Err(invalid(&format!("compute_units must be at most {MAX_COMPUTE_UNITS}")));
        }
        if self.max_groups.is_some_and(|g| g.contains(&0)) {
            return Err(invalid("max_groups must be positive"));
        }
        if self.compute_units == 0 || self.vector_width == 0 {
            return Err(invalid("compute_units and vector_width must be positive"));
        }
        if !matches!(self.address_bits, 32 | 64) {
            return Err(invalid("address_bits must be 32 or 64"));
        }
        if let Some(r) = &self.rates {
            let positive = [r.gflops, r.bandwidth_gbs].iter().all(|x| x.is_finite() && *x > 0.0);
            let times = [r.launch_us, r.group_us].iter().all(|x| x.is_finite() && *x >= 0.0);
            if !(positive && times) {
                return Err(invalid(
                    "rates: gflops and bandwidth_gbs must be positive, launch_us and group_us not negative",
                ));
            }
            let caches = [r.cache_bandwidth_gbs, r.l1_bandwidth_gbs, r.l2_bandwidth_gbs];
            if !caches.iter().all(|x| x.is_finite() && *x >= 0.0) {
                return Err(invalid(
                    "rates: cache_bandwidth_gbs, l1_bandwidth_gbs and l2_bandwidth_gbs must be numbers, positive or 0 (unknown)",
                ));
            }
            if r.simd_width == 0 || r.line_bytes == 0 {
                return Err(invalid("rates: simd_width and line_bytes must be positive"));
            }
            r.plausible().map_err(|m| invalid(&m))?;
        }
        Ok(())
    }

    /// The profile as a TOML file that [`Profile::from_toml`] reads back: the lines of `header`
    /// first, as `#` comments (say where the figures came from), then one line per field in
    /// declaration order, each preceded by its note from `notes` (`(field, text)`, as `#`
    /// comments; notes naming no field are ignored), then the `[rates]` table if there is one
    /// (notes name its fields `rates.gflops`, ...).
    ///
    /// Fails only on a figure TOML cannot hold (an integer above `i64::MAX`).
    pub fn to_toml(&self, header: &str, notes: &[(&str, &str)]) -> Result<String, ProfileError> {
        let invalid = |m: String| ProfileError::Invalid { origin: self.name.clone(), message: m };
        let table = toml::Table::try_from(self).map_err(|e| invalid(e.to_string()))?;
        let mut out = String::new();
        let comment = |out: &mut String, text: &str| {
            for line in text.lines() {
                out.push_str(if line.is_empty() { "#" } else { "# " });
                out.push_str(line);
                out.push('\n');
            }
        };
        comment(&mut out, header);
        for field in FIELDS {
            let value = match table.get(field) {
                Some(v) => v,
                None if OPTIONAL_FIELDS.contains(&field) => continue,
                None => return Err(invalid(format!("field `{field}` was not serialized"))),
            };
            for (_, text) in notes.iter().filter(|(f, _)| *f == field) {
                comment(&mut out, text);
            }
            out.push_str(&format!("{field} = {value}\n"));
        }
        if let Some(rates) = table.get("rates").and_then(|r| r.as_table()) {
            out.push_str("\n[rates]\n");
            for field in RATE_FIELDS {
                let value = match rates.get(field) {
                    Some(v) => v,
                    None if OPTIONAL_FIELDS.contains(&field) => continue,
                    None => return Err(invalid(format!("rate `{field}` was not serialized"))),
                };
                for (_, text) in notes.iter().filter(|(f, _)| f.strip_prefix("rates.") == Some(field)) {
                    comment(&mut out, text);
                }
                out.push_str(&format!("{field} = {value}\n"));
            }
        }
        Ok(out)
    }

    /// The names of the built-in profiles.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<Profile> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        Profile::from_toml(text, name).ok()
    }

    /// A built-in profile by name, or else a profile file at that path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(p) = Profile::builtin(name_or_path) {
            return Ok(p);
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ProfileError::Unknown {
                name: name_or_path.to_string(),
                known: Profile::builtin_names().join(", "),
            });
        }
        // A profile is a few hundred bytes; 1 MiB is room to spare.
        let text = crate::files::read_text(path, 1 << 20)
            .map_err(|source| ProfileError::Io { path: name_or_path.to_string(), source })?;
        Profile::from_toml(&text, name_or_path)
    }
}

/// Three values, exactly.
fn three<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u64; 3], D::Error> {
    let v: Vec<u64> = Vec::deserialize(d)?;
    <[u64; 3]>::try_from(v.as_slice())
        .map_err(|_| serde::de::Error::custom(format!("expected 3 values (x, y, z), found {}", v.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load() {
        for name in Profile::builtin_names() {
            let text = BUILTIN.iter().find(|(n, _)| *n == name).unwrap().1;
            let p = Profile::from_toml(text, name).unwrap();
            assert_eq!(p.name, name);
        }
        assert_eq!(Profile::load("mali-g72-mp12").unwrap().max_work_group_size, 384);
        assert!(Profile::builtin_names().iter().all(|n| Profile::builtin(n).unwrap().address_bits == 64));
        assert!(matches!(Profile::load("no-such-device"), Err(ProfileError::Unknown { .. })));
    }

    #[test]
    fn to_toml_round_trips_with_comments() {
        for name in Profile::builtin_names() {
            let p = Profile::builtin(name).unwrap();
            let text = p
                .to_toml("A test profile.\nSecond line.", &[("local_mem_bytes", "From a table."), ("nothing", "x")])
                .unwrap();
            assert!(text.starts_with("# A test profile.\n# Second line.\n"), "{text}");
            assert!(text.contains("# From a table.\nlocal_mem_bytes = "), "{text}");
            assert!(!text.contains("# x"), "{text}");
            assert_eq!(Profile::from_toml(&text, name).unwrap(), p);
        }
    }

    #[test]
    fn address_bits_default_to_64_and_are_32_or_64() {
        let pocl = include_str!("../profiles/pocl-cpu.toml");
        let without: String =
            pocl.lines().filter(|l| !l.starts_with("address_bits")).map(|l| format!("{l}\n")).collect();
        assert_eq!(Profile::from_toml(&without, "test").unwrap().address_bits, 64);
        let bits = |b: u32| {
            Profile::from_toml(&without.replace("max_dims = 3", &format!("max_dims = 3\naddress_bits = {b}")), "test")
        };
        assert_eq!(bits(32).unwrap().address_bits, 32);
        let e = bits(48).unwrap_err().to_string();
        assert!(e.contains("address_bits must be 32 or 64"), "{e}");
    }

    #[test]
    fn to_toml_writes_every_field_once() {
        let mut p = Profile::builtin("pocl-cpu").unwrap();
        p.max_groups = Some([1 << 31, 65535, 65535]); // h100's, which has no private_group_bytes
        let table = toml::Table::try_from(&p).unwrap();
        assert_eq!(table.len(), FIELDS.len() + usize::from(p.rates.is_some()));
        let text = p.to_toml("", &[]).unwrap();
        for f in FIELDS {
            assert_eq!(text.lines().filter(|l| l.starts_with(&format!("{f} = "))).count(), 1, "{f}");
        }
    }

    #[test]
    fn descriptions_with_quotes_and_newlines_survive() {
        let mut p = Profile::builtin("h100").unwrap();
        p.description = "a \"quoted\" name\non two lines # not a comment".into();
        let text = p.to_toml("h", &[]).unwrap();
        assert_eq!(Profile::from_toml(&text, "t").unwrap(), p);
    }

    /// Every rate is checked: a cache's bandwidth that is NaN or negative was taken as no cache.
    #[test]
    fn cache_rates_are_numbers_not_below_zero() {
        let mut p = Profile::builtin("pocl-cpu").unwrap();
        for bad in [f64::NAN, -1.0, f64::INFINITY] {
            for field in 0..3 {
                let r = p.rates.as_mut().unwrap();
                let saved = (r.cache_bandwidth_gbs, r.l1_bandwidth_gbs, r.l2_bandwidth_gbs);
                *[&mut r.cache_bandwidth_gbs, &mut r.l1_bandwidth_gbs, &mut r.l2_bandwidth_gbs][field] = bad;
                let e = p.validate("t").unwrap_err().to_string();
                assert!(e.contains("l1_bandwidth_gbs"), "{e}");
                let r = p.rates.as_mut().unwrap();
                (r.cache_bandwidth_gbs, r.l1_bandwidth_gbs, r.l2_bandwidth_gbs) = saved;
            }
        }
        p.rates.as_mut().unwrap().l2_bandwidth_gbs = 0.0;
        assert!(p.validate("t").is_ok(), "0: unknown");
    }

    /// A device has compute units and a vector width of at least 1 (0 was accepted).
    #[test]
    fn compute_units_and_vector_width_are_positive() {
        for field in 0..2 {
            let mut p = Profile::builtin("pocl-cpu").unwrap();
            *[&mut p.compute_units, &mut p.vector_width][field] = 0;
            let e = p.validate("t").unwrap_err().to_string();
            assert!(e.contains("compute_units and vector_width must be positive"), "{e}");
        }
    }

    /// Figures no device is near are refused: a work-item limit of 2^63 made every tune
    /// enumerate millions of work-group sizes per candidate, and a rate of 10^-300 GFLOP/s
    /// predicted times of 190 digits.
    #[test]
    fn implausible_figures_are_refused() {
        type Edit = dyn Fn(&mut Profile);
        let edits: [(&Edit, &str); 6] = [
            (&|p| p.max_work_item_sizes = [i64::MAX as u64; 3], "work-group sizes must be at most 1048576"),
            (&|p| p.max_work_group_size = 1 << 40, "work-group sizes must be at most"),
            (&|p| p.compute_units = u32::MAX, "compute_units must be at most"),
            (&|p| p.rates.as_mut().unwrap().gflops = 1e-300, "gflops and the bandwidths"),
            (&|p| p.rates.as_mut().unwrap().l2_bandwidth_gbs = 1e30, "gflops and the bandwidths"),
            (&|p| p.rates.as_mut().unwrap().group_us = 1.7e308, "launch_us and group_us must be at most"),
        ];
        for (edit, want) in edits {
            let mut p = Profile::builtin("h100").unwrap();
            edit(&mut p);
            let e = p.validate("t").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        for name in ["h100", "pocl-cpu", "mali-g72-mp12"] {
            Profile::builtin(name).unwrap().validate(name).unwrap();
        }
    }

    /// The h100 profile carries CUDA's grid limits; a limit of 0 groups is refused.
    #[test]
    fn grid_limits_are_read_and_positive() {
        let mut p = Profile::builtin("h100").unwrap();
        assert_eq!(p.max_groups, Some([(1 << 31) - 1, 65535, 65535]));
        assert_eq!(Profile::builtin("pocl-cpu").unwrap().max_groups, None);
        p.max_groups = Some([1, 0, 1]);
        let e = p.validate("t").unwrap_err().to_string();
        assert!(e.contains("max_groups must be positive"), "{e}");
    }

    /// Three work-item sizes, exactly: five were read as their first three (a tester's finding).
    #[test]
    fn work_item_sizes_are_three() {
        let text = Profile::builtin("pocl-cpu").unwrap().to_toml("t", &[]).unwrap();
        assert!(Profile::from_toml(&text, "t").is_ok());
        let line = text.lines().find(|l| l.starts_with("max_work_item_sizes")).unwrap();
        for bad in ["[4096, 4096, 4096, 7, 9]", "[4096, 4096]"] {
            let e = Profile::from_toml(&text.replace(line, &format!("max_work_item_sizes = {bad}")), "t").unwrap_err();
            assert!(e.to_string().contains("expected 3 values (x, y, z)"), "{e}");
        }
    }

    #[test]
    fn figures_toml_cannot_hold_are_errors() {
        let mut p = Profile::builtin("h100").unwrap();
        p.local_mem_bytes = u64::MAX;
        assert!(matches!(p.to_toml("", &[]), Err(ProfileError::Invalid { .. })));
    }
}
