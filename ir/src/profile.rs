//! Device profiles: the limits of a target device that constrain parallel mappings, read from
//! plain TOML files. Three ship with mapsat (`ir/profiles/*.toml`): `mali-g72-mp12` (the GPU of
//! Mogers et al., CC'22), `h100` and `pocl-cpu`; each figure in those files cites its source.

use serde::Deserialize;
use std::path::Path;

/// The limits of one device.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
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
    /// Largest work-group extent in each of the three dimensions.
    pub max_work_item_sizes: [u64; 3],
    /// Number of NDRange dimensions (1 to 3).
    pub max_dims: u32,
    /// Local (shared) memory per work group, in bytes.
    pub local_mem_bytes: u64,
    /// Private memory per work item, in bytes (registers; approximate where spilling exists).
    pub private_mem_bytes: u64,
    /// Preferred float vector width.
    pub vector_width: u32,
}

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
        let invalid = |m: &str| ProfileError::Invalid { origin: origin.to_string(), message: m.to_string() };
        if !(1..=3).contains(&p.max_dims) {
            return Err(invalid("max_dims must be 1, 2 or 3"));
        }
        if p.max_work_group_size == 0 || p.max_work_item_sizes.contains(&0) {
            return Err(invalid("work-group sizes must be positive"));
        }
        Ok(p)
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
        let text = std::fs::read_to_string(path)
            .map_err(|source| ProfileError::Io { path: name_or_path.to_string(), source })?;
        Profile::from_toml(&text, name_or_path)
    }
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
        assert!(matches!(Profile::load("no-such-device"), Err(ProfileError::Unknown { .. })));
    }
}
