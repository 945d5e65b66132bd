//! The targets' limits on a launch shape: CUDA's fixed grid, block and static shared memory
//! limits, and a device
//! profile's work-group limits (OpenCL's `CL_DEVICE_MAX_WORK_ITEM_SIZES` and
//! `CL_DEVICE_MAX_WORK_GROUP_SIZE`) and global-size limit (the range of the device's `size_t`,
//! `CL_DEVICE_ADDRESS_BITS` wide: `clEnqueueNDRangeKernel` refuses a global size beyond it). A
//! launch beyond them is refused at code generation with the dimension and the limit, instead
//! of failing at launch time.

use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::kir::Launch;

/// CUDA's limits on the grid (blocks per dimension x, y, z), compute capability 3.0 and later.
pub const CUDA_MAX_GRID: [i64; 3] = [(1 << 31) - 1, 65_535, 65_535];
/// CUDA's limits on a block (threads per dimension x, y, z).
pub const CUDA_MAX_BLOCK: [i64; 3] = [1024, 1024, 64];
/// CUDA's limit on the threads of a block.
pub const CUDA_MAX_BLOCK_THREADS: i64 = 1024;
/// CUDA's limit on a block's statically allocated shared memory (`__shared__` arrays, which is
/// how kernels hold local memory), on every compute capability: 48 KiB.
pub const CUDA_MAX_STATIC_SHARED: u64 = 48 * 1024;

/// Refuses a kernel whose static shared memory (`__shared__` arrays) CUDA cannot allocate.
pub fn check_cuda_shared(bytes: u64) -> Result<(), CodegenError> {
    match bytes <= CUDA_MAX_STATIC_SHARED {
        true => Ok(()),
        false => Err(limit(format!(
            "{bytes} bytes of shared memory per block, CUDA allows at most {CUDA_MAX_STATIC_SHARED} statically allocated"
        ))),
    }
}

const AXES: [&str; 3] = ["x", "y", "z"];

fn limit(reason: String) -> CodegenError {
    K::LaunchLimit(reason).into()
}

/// Refuses a launch that CUDA cannot run: more blocks or threads per block than it allows.
pub fn check_cuda(l: &Launch) -> Result<(), CodegenError> {
    for d in 0..3 {
        let block = l.local[d].max(1);
        let blocks = l.global[d] / block + i64::from(l.global[d] % block != 0);
        if blocks > CUDA_MAX_GRID[d] {
            return Err(limit(format!(
                "{blocks} blocks in grid dimension {} (global {} / block {}), CUDA allows at most {}",
                AXES[d], l.global[d], l.local[d], CUDA_MAX_GRID[d]
            )));
        }
        if l.local[d] > CUDA_MAX_BLOCK[d] {
            return Err(limit(format!(
                "{} threads in block dimension {}, CUDA allows at most {}",
                l.local[d], AXES[d], CUDA_MAX_BLOCK[d]
            )));
        }
    }
    check_group_size(&l.local, CUDA_MAX_BLOCK_THREADS)
}

/// Refuses a work-group size with more work items than `max` in all.
pub fn check_group_size(local: &[i64; 3], max: i64) -> Result<(), CodegenError> {
    let total = local.iter().try_fold(1i64, |a, &x| a.checked_mul(x));
    match total {
        Some(t) if t <= max => Ok(()),
        _ => Err(limit(format!("local size {local:?} has more than {max} work items (the target's limit)"))),
    }
}

/// Refuses a kernel whose work group holds more than `max` bytes of local memory.
pub fn check_local(bytes: u64, max: u64) -> Result<(), CodegenError> {
    match bytes <= max {
        true => Ok(()),
        false => Err(limit(format!(
            "{bytes} bytes of local memory per work group; the target allows {max} (local_mem_bytes)"
        ))),
    }
}

/// Refuses a kernel whose work group holds more than `max` bytes of private memory in all
/// (`private` bytes per work item times the work items).
pub fn check_private_group(private: u64, local: &[i64; 3], max: u64) -> Result<(), CodegenError> {
    let items = local.iter().map(|x| (*x).max(1) as u64).product::<u64>();
    match private.checked_mul(items) {
        Some(t) if t <= max => Ok(()),
        total => Err(limit(format!(
            "a work group of {items} work items (local size {local:?}) holds {} bytes of private memory \
             ({private} per work item); the target allows {max} (private_group_bytes)",
            total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string())
        ))),
    }
}

/// Refuses a launch with more work groups in a dimension than a device's `max` there.
pub fn check_groups(l: &Launch, max: &[u64; 3]) -> Result<(), CodegenError> {
    for (d, most) in max.iter().enumerate() {
        let block = l.local[d].max(1);
        let groups = l.global[d] / block + i64::from(l.global[d] % block != 0);
        if groups as u64 > *most {
            return Err(limit(format!(
                "{groups} work groups in dimension {d} (global {} / local {}), the target launches at most {most} (max_groups)",
                l.global[d], l.local[d]
            )));
        }
    }
    Ok(())
}

/// Refuses a work-group size beyond a device's per-dimension limits.
pub fn check_work_items(local: &[i64; 3], max: &[i64; 3]) -> Result<(), CodegenError> {
    for d in 0..3 {
        if local[d] > max[d] {
            return Err(limit(format!(
                "local size {} in dimension {d}, the target allows at most {} (max_work_item_sizes)",
                local[d], max[d]
            )));
        }
    }
    Ok(())
}

/// Refuses a global size that a device with `bits`-bit addresses (`size_t`) cannot hold in some
/// dimension: at most 2^bits - 1 work items, so 4,294,967,295 on a 32-bit device.
pub fn check_address_bits(global: &[i64; 3], bits: u32) -> Result<(), CodegenError> {
    let max = 1i64.checked_shl(bits).filter(|m| *m > 0).map_or(i64::MAX, |m| m - 1);
    for (d, &g) in global.iter().enumerate() {
        if g > max {
            return Err(limit(format!(
                "global size {g} in dimension {d}, a device with {bits}-bit addresses allows at most {max} (address_bits)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_sizes_fit_the_address_bits() {
        let max32 = u32::MAX as i64;
        assert!(check_address_bits(&[max32, 1, 1], 32).is_ok());
        let e = check_address_bits(&[1, max32 + 1, 1], 32).unwrap_err().to_string();
        assert!(e.contains("global size 4294967296 in dimension 1") && e.contains("at most 4294967295"), "{e}");
        assert!(check_address_bits(&[1 << 62, 1, 1], 64).is_ok());
    }

    #[test]
    fn a_work_groups_private_memory_fits_the_limit() {
        // 6,272 bytes per work item: 512 work items hold 3,211,264 bytes, 1,024 hold 6,422,528.
        assert!(check_private_group(6272, &[32, 16, 1], 4 << 20).is_ok());
        let e = check_private_group(6272, &[64, 16, 1], 4 << 20).unwrap_err().to_string();
        assert!(
            e.contains("1024 work items") && e.contains("holds 6422528 bytes") && e.contains("allows 4194304"),
            "{e}"
        );
        let e = check_private_group(u64::MAX, &[2, 1, 1], 4 << 20).unwrap_err().to_string();
        assert!(e.contains("more than 2^64"), "{e}");
    }
}
