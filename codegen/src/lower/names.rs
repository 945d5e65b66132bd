//! C names: every buffer and loop variable of a kernel gets a distinct identifier that is no
//! keyword or built-in of OpenCL C or CUDA, derived from the program's names (parameters,
//! binders, map labels).

use super::Lower;
use mapsat_ir::ast::MapKind;

/// Keywords and built-ins a name must not take (reserved in [`Lower`]'s name set from the start).
pub(super) const RESERVED: &[&str] = &[
    "int",
    "float",
    "double",
    "char",
    "void",
    "bool",
    "for",
    "if",
    "else",
    "while",
    "do",
    "return",
    "const",
    "restrict",
    "kernel",
    "global",
    "local",
    "private",
    "constant",
    "half",
    "long",
    "short",
    "unsigned",
    "signed",
    "struct",
    "union",
    "switch",
    "case",
    "break",
    "continue",
    "default",
    "sizeof",
    "static",
    "inline",
    "auto",
    "goto",
    "enum",
    "extern",
    "register",
    "typedef",
    "volatile",
    "min",
    "max",
    "clamp",
    "exp",
    "log",
    // OpenCL C 2.0 and 3.0 keywords.
    "pipe",
    "generic",
    "read_only",
    "write_only",
    "read_write",
    "uniform",
    "complex",
    "imaginary",
    // C++ keywords (CUDA C is C++).
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_assert",
    "static_cast",
    "template",
    "this",
    "thread_local",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// OpenCL C's built-in functions (OpenCL C 1.2, section 6.12: math, integer, common, geometric,
/// relational, vector, synchronization and miscellaneous functions) but those [`builtin`] covers
/// by prefix (`native_`, `half_`, `vload`, `atomic_`, `async_`, `get_`, `read_`, `write_`), and
/// CUDA's that a name could take (`sqrt`, `pow`).
const FUNCTIONS: &[&str] = &[
    // Math.
    "acos",
    "acosh",
    "acospi",
    "asin",
    "asinh",
    "asinpi",
    "atan",
    "atan2",
    "atanh",
    "atanpi",
    "atan2pi",
    "cbrt",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "cospi",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "fabs",
    "fdim",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "fract",
    "frexp",
    "hypot",
    "ilogb",
    "ldexp",
    "lgamma",
    "lgamma_r",
    "log",
    "log2",
    "log10",
    "log1p",
    "logb",
    "mad",
    "maxmag",
    "minmag",
    "modf",
    "nan",
    "nextafter",
    "pow",
    "pown",
    "powr",
    "remainder",
    "remquo",
    "rint",
    "rootn",
    "round",
    "rsqrt",
    "sin",
    "sincos",
    "sinh",
    "sinpi",
    "sqrt",
    "tan",
    "tanh",
    "tanpi",
    "tgamma",
    "trunc",
    // Integer.
    "abs",
    "abs_diff",
    "add_sat",
    "hadd",
    "rhadd",
    "clz",
    "ctz",
    "mad_hi",
    "mad_sat",
    "mul_hi",
    "rotate",
    "sub_sat",
    "upsample",
    "popcount",
    "mad24",
    "mul24",
    // Common and geometric.
    "clamp",
    "degrees",
    "max",
    "min",
    "mix",
    "radians",
    "step",
    "smoothstep",
    "sign",
    "cross",
    "dot",
    "distance",
    "length",
    "normalize",
    "fast_distance",
    "fast_length",
    "fast_normalize",
    // Relational.
    "isequal",
    "isnotequal",
    "isgreater",
    "isgreaterequal",
    "isless",
    "islessequal",
    "islessgreater",
    "isfinite",
    "isinf",
    "isnan",
    "isnormal",
    "isordered",
    "isunordered",
    "signbit",
    "any",
    "all",
    "bitselect",
    "select",
    // Synchronization, copies and the rest.
    "barrier",
    "wait_group_events",
    "prefetch",
    "vec_step",
    "shuffle",
    "shuffle2",
    "printf",
];

/// A C identifier for `s`: other characters become `_`, a leading digit gets a `v`, the name
/// of a built-in function, a keyword or `main` a `_kernel` suffix (a kernel named `int` or
/// `kernel` did not build; in [`Lower::fresh`] the keywords are taken already), and a name of the built-ins' and macros'
/// ([`builtin`]) a `v_` prefix.
pub(crate) fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'v');
    }
    // A kernel named like a built-in function of OpenCL C or CUDA (`dot`, `upsample`) does not
    // build (pocl: CL_INVALID_KERNEL_NAME).
    if FUNCTIONS.contains(&out.as_str()) || RESERVED.contains(&out.as_str()) || out == "main" {
        out.push_str("_kernel");
    } else if builtin(&out) {
        out.insert_str(0, "v_");
    }
    out
}

/// Names of OpenCL C's and CUDA's built-ins and macros that a program's names (parameters,
/// stages, labels) must not take in a kernel: a parameter `get_global_id` or `INFINITY`, or
/// `threadIdx` in CUDA, shadows or breaks what the kernel calls (it no longer builds). Besides
/// [`RESERVED`] (kept out of the name set from the start): names with the built-ins' and
/// macros' prefixes, the vector types, the implementation's `__` names, C's `_` and capital
/// letter names (`_Bool`) and the `_t` names of types (`image3d_t`, `intptr_t`,
/// `reserve_id_t`); such a name gets a `v_` prefix.
fn builtin(s: &str) -> bool {
    const EXACT: &[&str] = &[
        "INFINITY",
        "NAN",
        "HUGE_VAL",
        "HUGE_VALF",
        "MAXFLOAT",
        "NULL",
        "true",
        "false",
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "warpSize",
        "barrier",
        "select",
        "fmax",
        "fmin",
        "fabs",
        "fma",
        "mad",
        "rsqrt",
        "floor",
        "ceil",
        "round",
        "trunc",
        "sin",
        "cos",
        "tan",
        "tanh",
        "exp2",
        "log2",
        "isnan",
        "isinf",
        "printf",
        "uint",
        "uchar",
        "ushort",
        "ulong",
        "fmaxf",
        "fminf",
        "fabsf",
        "expf",
        "logf",
        "sqrtf",
        "powf",
        "tanhf",
        "abs",
        "dim3",
        "uint3",
        // Macros GNU-mode host compilers predefine (nvcc preprocesses with one).
        "unix",
        "linux",
        "i386",
    ];
    const PREFIXES: &[&str] = &[
        "__",
        "get_",
        "mapsat_",
        "convert_",
        "vload",
        "vstore",
        "as_",
        "make_",
        "atomic",
        "native_",
        "half_",
        "async_",
        "read_",
        "write_",
        "mem_fence",
        "sub_group",
        "work_group",
        "M_",
        "FLT_",
        "DBL_",
        "INT_",
        "UINT_",
        "LONG_",
        "ULONG_",
        "SHRT_",
        "USHRT_",
        "CHAR_",
        "SCHAR_",
        "UCHAR_",
        "CLK_",
        "CL_",
        "FP_",
        "HALF_",
        "CUDA",
        "cl_",
        "POCL_",
    ];
    const SCALARS: &[&str] =
        &["char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half"];
    let vector_type =
        SCALARS.iter().any(|t| s.strip_prefix(t).is_some_and(|n| ["1", "2", "3", "4", "8", "16"].contains(&n)));
    // C reserves `_` and a capital letter for its keywords (`_Bool`, `_Complex`, `_Atomic`).
    let c_reserved = s.strip_prefix('_').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
    EXACT.contains(&s) || PREFIXES.iter().any(|p| s.starts_with(p)) || s.ends_with("_t") || vector_type || c_reserved
}

/// The display name of a map: `mapGlb(0)@A`, `mapSeq@B`.
pub(super) fn map_name(kind: MapKind, label: &str) -> String {
    match kind.dim() {
        Some(d) => format!("{}({d})@{label}", kind.name()),
        None => format!("{}@{label}", kind.name()),
    }
}

impl Lower<'_> {
    /// A fresh C name based on `base`, distinct from every name given out so far.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut k = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }
}
