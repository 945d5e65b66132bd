//! What a lowered kernel does, counted once per candidate: the facts the analytical model and
//! the learned model's features are computed from.
//!
//! Counts are *lane work*: a statement inside loops runs `∏ extent` times over the whole launch
//! (a parallel loop's indices are spread over threads, a sequential loop runs in each thread),
//! times the threads that run it redundantly (those no enclosing parallel loop tells apart,
//! e.g. the threads of a work group running a sequential loop outside every `mapLcl`).
//!
//! Global accesses are classified by their stride along the *lane variable*, the loop over the
//! fastest-varying thread id (`Global(0)` or `Local(0)`): 0 is a broadcast, 1 is coalesced, more
//! is strided. Transactions per group of `simd` lanes follow from the stride and the line size.

use mapsat_codegen::kir::{Expr, Kernel, LoopKind, Place, Space, Stmt, Trips};

/// Counts of one kernel (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelStats {
    /// Work items per work group.
    pub threads_per_group: f64,
    /// Work groups.
    pub groups: f64,
    /// Fraction of launched work items that have work in the outermost parallel loops.
    pub busy_fraction: f64,
    /// Floating-point operations, lane work (redundant computation counted).
    pub lane_flops: f64,
    /// Floating-point operations of the program (no redundancy).
    pub flops: f64,
    /// Global loads and stores (lane work), in accesses.
    pub global_loads: f64,
    /// Global stores.
    pub global_stores: f64,
    /// Global accesses with stride 0 along the lane variable (or outside it).
    pub global_broadcast: f64,
    /// Global accesses with stride 1.
    pub global_coalesced: f64,
    /// Global accesses with a larger stride.
    pub global_strided: f64,
    /// Memory transactions of global accesses, for `simd`-wide lane groups and `line`-byte lines.
    pub global_transactions: f64,
    /// Bytes of global accesses actually used (lane work times bytes per access).
    pub global_bytes: f64,
    /// Local-memory loads and stores.
    pub local_accesses: f64,
    /// Private-memory loads and stores (arrays; scalars promoted to registers are free).
    pub private_accesses: f64,
    /// Vector accesses (width above 1) among all accesses.
    pub vector_accesses: f64,
    /// Barriers executed, per work group.
    pub barriers_per_group: f64,
    /// Barrier statements in the kernel text.
    pub barrier_sites: f64,
    /// Deepest loop nesting.
    pub depth: f64,
    /// Sequential loop iterations of the innermost loop bodies, per thread (the longest path).
    pub seq_iterations_per_thread: f64,
    /// Extents of the loops by nesting depth (first 6 levels, largest extent seen at each).
    pub level_extents: [f64; 6],
    /// Loop kinds by depth, as codes: 0 none, 1 sequential, 2 vector, 3 global, 4 group, 5 local.
    pub level_kinds: [f64; 6],
    /// Bytes of local memory per work group.
    pub local_bytes: f64,
    /// Bytes of private memory per thread.
    pub private_bytes: f64,
    /// Bytes of the kernel's global buffers (inputs, output, temporaries).
    pub footprint_bytes: f64,
}

/// The lanes that run together and the bytes of a memory transaction.
#[derive(Clone, Copy, Debug)]
pub struct Lanes {
    /// Work items that run in lock step.
    pub simd: u32,
    /// Bytes of a memory transaction.
    pub line: u32,
}

struct Frame<'k> {
    var: &'k str,
    kind: LoopKind,
    extent: i64,
}

struct Walk<'k> {
    k: &'k Kernel,
    lanes: Lanes,
    /// The kernel's threads are work groups and local ids (`mapWrg`/`mapLcl`), not global ids.
    grouped: bool,
    stack: Vec<Frame<'k>>,
    s: KernelStats,
}

impl KernelStats {
    /// Counts `k` (see the module documentation).
    pub fn of(k: &Kernel, lanes: Lanes) -> KernelStats {
        let l = &k.launch;
        let threads = (l.local[0] * l.local[1] * l.local[2]).max(1) as f64;
        let launched = (l.global[0] * l.global[1] * l.global[2]).max(1) as f64;
        let mem = k.memory();
        let mut w = Walk {
            k,
            lanes,
            grouped: has_loop(&k.body, &|kind| matches!(kind, LoopKind::Group(_) | LoopKind::Local(_))),
            stack: Vec::new(),
            s: KernelStats {
                threads_per_group: threads,
                groups: (launched / threads).max(1.0),
                flops: k.flops as f64,
                local_bytes: mem.local_bytes as f64,
                private_bytes: mem.private_bytes as f64,
                footprint_bytes: mem.global_bytes as f64,
                busy_fraction: 1.0,
                ..KernelStats::default()
            },
        };
        w.s.busy_fraction = busy_fraction(&k.body, launched, k);
        w.block(&k.body);
        w.s
    }
}

/// Is some loop of `body` of a kind `pred` accepts?
fn has_loop(body: &[Stmt], pred: &dyn Fn(LoopKind) -> bool) -> bool {
    body.iter().any(|s| match s {
        Stmt::Loop { kind, body, .. } => pred(*kind) || has_loop(body, pred),
        Stmt::Block(b) => has_loop(b, pred),
        _ => false,
    })
}

/// The fraction of launched work items with an index in the outermost parallel loops (global
/// sizes are rounded up to a multiple of the work-group size).
fn busy_fraction(body: &[Stmt], launched: f64, k: &Kernel) -> f64 {
    let mut covered = [1i64; 3];
    let mut stack: Vec<&[Stmt]> = vec![body];
    while let Some(stmts) = stack.pop() {
        for s in stmts {
            match s {
                Stmt::Loop { kind: LoopKind::Global(d) | LoopKind::Group(d), extent, .. } => {
                    let d = *d as usize;
                    let threads = match s {
                        Stmt::Loop { kind: LoopKind::Group(_), .. } => extent * k.launch.local[d],
                        _ => *extent,
                    };
                    covered[d] = covered[d].max(threads.min(k.launch.global[d]));
                }
                Stmt::Loop { body, .. } | Stmt::Block(body) => stack.push(body),
                _ => {}
            }
        }
    }
    (covered.iter().product::<i64>() as f64 / launched).clamp(0.0, 1.0)
}

impl<'k> Walk<'k> {
    fn block(&mut self, stmts: &'k [Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    /// Executions of a statement at the current depth, lane work: the product of the enclosing
    /// loops' extents, times the threads of each dimension that no enclosing parallel loop over
    /// that dimension tells apart.
    fn count(&self) -> f64 {
        let mut n: f64 = self.stack.iter().map(|f| f.extent.max(1) as f64).product();
        let l = &self.k.launch;
        let inside = |kind: LoopKind| self.stack.iter().any(|f| f.kind == kind);
        for d in 0..3 {
            if self.grouped {
                if !inside(LoopKind::Local(d as u8)) {
                    n *= l.local[d] as f64;
                }
                if !inside(LoopKind::Group(d as u8)) {
                    n *= (l.global[d] / l.local[d].max(1)) as f64;
                }
            } else if !inside(LoopKind::Global(d as u8)) {
                n *= l.global[d] as f64;
            }
        }
        n
    }

    fn stmt(&mut self, s: &'k Stmt) {
        match s {
            Stmt::Comment(_) => {}
            Stmt::Decl(_, init) => {
                if let Some(e) = init {
                    let n = self.count();
                    self.expr(e, n);
                }
            }
            Stmt::Store(place, e) => {
                let n = self.count();
                self.expr(e, n);
                self.s.lane_flops += n * ops(e) as f64 * place.width.max(1) as f64;
                self.access(place, n, true);
            }
            Stmt::Loop { var, kind, extent, trips, body, .. } => {
                self.stack.push(Frame { var, kind: *kind, extent: *extent });
                self.s.depth = self.s.depth.max(self.stack.len() as f64);
                let level = self.stack.len() - 1;
                if level < 6 {
                    self.s.level_extents[level] = self.s.level_extents[level].max(*extent as f64);
                    self.s.level_kinds[level] = kind_code(*kind, *trips);
                }
                if matches!(kind, LoopKind::Seq | LoopKind::Vec) {
                    let per_thread: f64 = self
                        .stack
                        .iter()
                        .filter(|f| matches!(f.kind, LoopKind::Seq | LoopKind::Vec))
                        .map(|f| f.extent as f64)
                        .product();
                    self.s.seq_iterations_per_thread = self.s.seq_iterations_per_thread.max(per_thread);
                }
                self.block(body);
                self.stack.pop();
            }
            Stmt::Block(b) => self.block(b),
            Stmt::Barrier { .. } => {
                self.s.barrier_sites += 1.0;
                let per_group: f64 = self
                    .stack
                    .iter()
                    .filter(|f| !matches!(f.kind, LoopKind::Group(_) | LoopKind::Global(_)))
                    .map(|f| f.extent as f64)
                    .product();
                self.s.barriers_per_group += per_group;
            }
        }
    }

    fn expr(&mut self, e: &'k Expr, n: f64) {
        match e {
            Expr::Load(p) => self.access(p, n, false),
            Expr::Bin(_, a, b) => {
                self.expr(a, n);
                self.expr(b, n);
            }
            Expr::Un(_, a) | Expr::Cast(_, a) | Expr::Lane(a, _) => self.expr(a, n),
            Expr::Select(c, a, b) => {
                self.expr(c, n);
                self.expr(a, n);
                self.expr(b, n);
            }
            Expr::Vector(_, es) => es.iter().for_each(|x| self.expr(x, n)),
            Expr::Lit(_) | Expr::Splat(..) | Expr::Int(_) | Expr::InRange(..) => {}
        }
    }

    fn access(&mut self, p: &Place, n: f64, store: bool) {
        let buf = self.k.buf(p.buf);
        if p.width > 1 {
            self.s.vector_accesses += n;
        }
        match buf.space {
            Space::Local => self.s.local_accesses += n,
            Space::Private => self.s.private_accesses += n,
            Space::Global => {
                if buf.by_value {
                    return;
                }
                if store {
                    self.s.global_stores += n;
                } else {
                    self.s.global_loads += n;
                }
                let bytes = (p.width.max(1) as u64 * buf.kind.bytes()) as f64;
                self.s.global_bytes += n * bytes;
                let stride = self.lane_stride(p);
                let simd = self.lanes.simd.max(1) as f64;
                let line = self.lanes.line.max(1) as f64;
                let per_group = match stride {
                    0 => {
                        self.s.global_broadcast += n;
                        1.0
                    }
                    1 => {
                        self.s.global_coalesced += n;
                        (simd * bytes / line).ceil().max(1.0)
                    }
                    s => {
                        self.s.global_strided += n;
                        (simd * s as f64 * bytes / line).ceil().clamp(1.0, simd)
                    }
                };
                self.s.global_transactions += n / simd * per_group;
            }
        }
    }

    /// The stride (in elements of the access) of `p`'s index along the lane variable: 0 when
    /// no enclosing loop is over the fastest-varying thread id or the index does not use it.
    fn lane_stride(&self, p: &Place) -> i64 {
        let lane = self.stack.iter().rev().find(|f| matches!(f.kind, LoopKind::Local(0) | LoopKind::Global(0)));
        let Some(lane) = lane else { return 0 };
        if !p.index.mentions(lane.var) {
            return 0;
        }
        let at = |v: i64| p.index.eval(&|name: &str| if name == lane.var { v } else { 0 });
        // Two places along the lane: divisions and remainders may make one step special.
        let d = ((at(2) - at(1)).abs()).max((at(1) - at(0)).abs());
        (d / p.width.max(1) as i64).max(i64::from(d != 0))
    }
}

fn kind_code(k: LoopKind, trips: Trips) -> f64 {
    let base = match k {
        LoopKind::Seq => 1.0,
        LoopKind::Vec => 2.0,
        LoopKind::Global(_) => 3.0,
        LoopKind::Group(_) => 4.0,
        LoopKind::Local(_) => 5.0,
    };
    // A parallel loop of exactly one iteration per thread is not a loop at all.
    if trips == Trips::One {
        base + 0.5
    } else {
        base
    }
}

/// Arithmetic operations of an expression (loads and literals excluded).
fn ops(e: &Expr) -> u64 {
    match e {
        Expr::Bin(_, a, b) => 1 + ops(a) + ops(b),
        Expr::Un(_, a) => 1 + ops(a),
        Expr::Cast(_, a) | Expr::Lane(a, _) => ops(a),
        Expr::Select(c, a, b) => 1 + ops(c) + ops(a) + ops(b),
        Expr::Vector(_, es) => es.iter().map(ops).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(src: &str, local: Option<Vec<i64>>) -> Kernel {
        let p = mapsat_ir::parse(src).unwrap();
        mapsat_codegen::lower(&p, &mapsat_codegen::Options { local, ..Default::default() }).unwrap()
    }

    const LANES: Lanes = Lanes { simd: 8, line: 64 };

    #[test]
    fn an_elementwise_map_is_coalesced() {
        let k = kernel("size N = 1024\ndef f(xs: [f32]N) = mapGlb(0, fun(x => x * 2.0), xs)", Some(vec![64]));
        let s = KernelStats::of(&k, LANES);
        assert_eq!((s.global_loads, s.global_stores), (1024.0, 1024.0));
        assert_eq!(s.global_coalesced, 2048.0);
        assert_eq!(s.lane_flops, 1024.0);
        // 8 lanes of 4 bytes: half a 64-byte line, one transaction per group of lanes.
        assert_eq!(s.global_transactions, 2048.0 / 8.0);
        assert_eq!((s.threads_per_group, s.groups), (64.0, 16.0));
        assert_eq!(s.busy_fraction, 1.0);
    }

    #[test]
    fn a_column_walk_is_strided_and_a_rounded_launch_is_not_all_busy() {
        // Each thread sums one column of a 100 x 64 matrix: consecutive threads read
        // consecutive elements (coalesced); with rows as threads the stride is the row length.
        let rows = "size N = 100, M = 64\ndef f(a: [[f32]M]N) = mapGlb(0, fun(r => reduceSeq(add, 0.0, r)), a)";
        let s = KernelStats::of(&kernel(rows, Some(vec![32])), LANES);
        assert_eq!(s.global_loads, 6400.0);
        assert_eq!(s.global_strided, 6400.0);
        assert!((s.busy_fraction - 100.0 / 128.0).abs() < 1e-9, "{}", s.busy_fraction);
        assert_eq!(s.seq_iterations_per_thread, 64.0);
    }
}
