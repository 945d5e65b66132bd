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
//! A statement can run in vector lanes (what a CPU driver's compiler does) when it lies directly
//! in the loop over the fastest-varying thread id and all its accesses have stride 0 or 1 along
//! that id, and no loop whose bounds depend on the work item's id encloses it in the same
//! region between barriers (a parallel loop with more than one index per thread, the loop
//! starting at the thread's id, that contains no barrier): the driver runs the work items of
//! a region in a loop of its own, which it can move inside the loops that every work item runs
//! alike (pocl's implicit loop barriers) but not inside these, and a compiler vectorizes
//! innermost loops only; or
//! when its innermost loop is sequential, it stores along that loop's variable (or, where the
//! compiler may reassociate sums, it accumulates across it: into a value declared outside the
//! loop, not one its body declares afresh each iteration), and all its accesses have stride 0
//! or 1 along it. Its operations are counted in `vector_flops`.
//!
//! Operations (arithmetic on values, and the index arithmetic of accesses: a term, a division,
//! a remainder, a bounds test of `pad`) and loads are counted once per iteration of the loops
//! they depend on: a device compiler hoists them out of the sequential loops nested inside the
//! deepest loop whose variable they use (register blocking relies on this: one input value, and
//! the index arithmetic that finds it, serve every output of the block). Within one block of
//! statements, a load, a selection or a bounds test computed again (the same expression, as
//! the unrolled statements of a register block repeat it) is counted once: the device
//! compiler computes it once (common-subexpression elimination), until a store to the buffer
//! it loads from.

use mapsat_codegen::index::{Atom, Index};
use mapsat_codegen::kir::{BufId, Expr, Kernel, LoopKind, Place, Space, Stmt, Trips, VarId};

/// Counts of one kernel (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelStats {
    /// Work items per work group.
    pub threads_per_group: f64,
    /// Work items per work group along the fastest-varying local id: those a CPU's driver runs
    /// together in vector lanes.
    pub lane_threads: f64,
    /// Work groups.
    pub groups: f64,
    /// Fraction of launched work items that have work in the outermost parallel loops.
    pub busy_fraction: f64,
    /// Operations on values and indices, lane work (redundant computation counted, loop
    /// invariants hoisted).
    pub lane_ops: f64,
    /// Floating-point operations of the program (no redundancy).
    pub flops: f64,
    /// Lane work of the statements whose accesses allow work items in vector lanes.
    pub vector_ops: f64,
    /// The part of `vector_ops` vectorized along a sequential loop of each work item (the
    /// others across the work items of a group): it needs no other work item to fill the lanes.
    pub vector_ops_in_item: f64,
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
    /// Distinct lines of global memory one work group touches (its working set, in lines;
    /// see [`KernelStats::of`]).
    pub group_lines: f64,
    /// Distinct lines of global memory one work item touches.
    pub item_lines: f64,
    /// Distinct lines of global memory `simd` consecutive work items (along the
    /// fastest-varying local id) touch: what a CPU runs at once in vector lanes, and the
    /// working set between two reads of a line that consecutive work items share.
    pub bundle_lines: f64,
}

/// The lanes that run together and the bytes of a memory transaction.
#[derive(Clone, Copy, Debug)]
pub struct Lanes {
    /// Work items that run in lock step.
    pub simd: u32,
    /// Bytes of a memory transaction.
    pub line: u32,
    /// The device compiler may reassociate floating-point sums, and so vectorize a reduction
    /// over its innermost sequential loop (see [`mapsat_codegen::REASSOCIATE`]).
    pub reassociate: bool,
}

struct Frame {
    var: VarId,
    kind: LoopKind,
    extent: i64,
    /// Each work item runs it as a loop whose bounds depend on its id, in the same region
    /// between barriers as its body: a parallel loop of more than one index per thread, with
    /// no barrier.
    runtime: bool,
}

struct Walk<'k> {
    k: &'k Kernel,
    lanes: Lanes,
    /// The kernel's threads are work groups and local ids (`mapWrg`/`mapLcl`), not global ids.
    grouped: bool,
    stack: Vec<Frame>,
    /// The loads, selections and bounds tests counted in the current block (see the module
    /// documentation), one list per open block.
    seen: Vec<Vec<(&'k Expr, usize)>>,
    /// The global accesses whose distinct lines are counted in `group_lines` and `item_lines`,
    /// by buffer, width and index less its constant (see [`Touched`]).
    touched: Vec<Touched>,
    /// The private variables and arrays declared so far, with the loop depth of their
    /// declaration.
    declared: Vec<(BufId, usize)>,
    s: KernelStats,
}

/// Global accesses that differ only by their index's constant (the unrolled iterations of a
/// sequential loop): the distinct lines of the first one, in a work group and in a work item,
/// and the constants of all.
struct Touched {
    buf: BufId,
    width: u32,
    index: Index,
    group: f64,
    bundle: f64,
    item: f64,
    constants: Vec<i64>,
}

impl Touched {
    /// Lines of the family: those of one access times the lines its constants fall in (each
    /// at most the buffer's lines).
    fn lines(&self, scope: Scope, bytes: f64, line: f64, buf_lines: f64) -> f64 {
        let mut at: Vec<i64> = self.constants.iter().map(|c| (*c as f64 * bytes / line).floor() as i64).collect();
        at.sort_unstable();
        at.dedup();
        let one = match scope {
            Scope::Group => self.group,
            Scope::Bundle => self.bundle,
            Scope::Item => self.item,
        };
        (one * at.len() as f64).min(buf_lines)
    }
}

/// Whose distinct lines are counted: one work group's, `simd` consecutive work items', or one
/// work item's.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    Group,
    Bundle,
    Item,
}

impl KernelStats {
    /// Counts `k` (see the module documentation).
    ///
    /// The working sets (`group_lines`, `bundle_lines`, `item_lines`) are the distinct lines
    /// of each global access summed: an access takes, in a scope, as many values of each loop
    /// variable its index uses as the scope runs of that loop (all of a sequential or local
    /// loop in a work group, a work group's share of a global or group loop; a work item's
    /// share of each parallel loop, `simd` times that along the fastest-varying id for a
    /// bundle of consecutive work items), and its elements fill lines along the variable of
    /// the smallest stride. Accesses that differ only by their index's constant (unrolled
    /// iterations) count the lines of one times the lines their constants fall in, at most
    /// their buffer's lines.
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
            seen: vec![Vec::new()],
            touched: Vec::new(),
            declared: Vec::new(),
            s: KernelStats {
                threads_per_group: threads,
                lane_threads: l.local[0].max(1) as f64,
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
        let line = f64::from(lanes.line.max(1));
        for t in &w.touched {
            let buf = k.buf(t.buf);
            let (bytes, buf_lines) = (buf.kind.bytes() as f64, (buf.bytes() as f64 / line).ceil().max(1.0));
            w.s.group_lines += t.lines(Scope::Group, bytes, line, buf_lines);
            w.s.bundle_lines += t.lines(Scope::Bundle, bytes, line, buf_lines);
            w.s.item_lines += t.lines(Scope::Item, bytes, line, buf_lines);
        }
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

/// Does `body` hold a barrier?
fn has_barrier(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Barrier { .. } => true,
        Stmt::Loop { body, .. } | Stmt::Block(body) => has_barrier(body),
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
                Stmt::Loop { kind, extent, body, .. } => {
                    let threads = match kind {
                        LoopKind::Global(d) => Some((*d as usize, *extent)),
                        LoopKind::Group(d) => Some((*d as usize, extent * k.launch.local[*d as usize])),
                        _ => None,
                    };
                    if let Some((d, n)) = threads {
                        covered[d] = covered[d].max(n.min(k.launch.global[d]));
                    }
                    stack.push(body);
                }
                Stmt::Block(body) => stack.push(body),
                _ => {}
            }
        }
    }
    (covered.iter().product::<i64>() as f64 / launched).clamp(0.0, 1.0)
}

impl<'k> Walk<'k> {
    fn block(&mut self, stmts: &'k [Stmt]) {
        self.seen.push(Vec::new());
        for s in stmts {
            self.stmt(s);
        }
        self.seen.pop();
    }

    /// The level of `e` if the block already computed it (a load, a selection or a bounds test).
    fn computed(&self, e: &Expr) -> Option<usize> {
        let seen = self.seen.last().expect("a block is open");
        seen.iter().find(|(x, _)| *x == e).map(|(_, level)| *level)
    }

    /// Records that the block computed `e` (if it is a load, a selection or a bounds test).
    fn remember(&mut self, e: &'k Expr, level: usize) {
        if matches!(e, Expr::Load(_) | Expr::Select(..) | Expr::InRange(..)) {
            self.seen.last_mut().expect("a block is open").push((e, level));
        }
    }

    /// A store to `buf`: what the block loaded from it may have changed.
    fn forget_loads_of(&mut self, buf: BufId) {
        let seen = self.seen.last_mut().expect("a block is open");
        seen.retain(|(e, _)| {
            let mut places = Vec::new();
            loads(e, &mut places);
            places.iter().all(|p| p.buf != buf)
        });
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
            Stmt::Comment(_) | Stmt::BarrierSlot(_) => {}
            Stmt::Decl(buf, init) => {
                self.declared.push((*buf, self.stack.len()));
                if let Some(e) = init {
                    let n = self.count();
                    self.expr(e, n);
                }
            }
            Stmt::Store(place, e) => {
                let n = self.count();
                let before = self.s.lane_ops;
                self.expr(e, n);
                self.index(&place.index, n);
                self.access(place, n, true);
                self.forget_loads_of(place.buf);
                if let Some(in_item) = self.vectorizable(place, e) {
                    self.s.vector_ops += self.s.lane_ops - before;
                    if in_item {
                        self.s.vector_ops_in_item += self.s.lane_ops - before;
                    }
                }
            }
            Stmt::Loop { var, kind, extent, trips, body, .. } => {
                let strided = !matches!(kind, LoopKind::Seq | LoopKind::Vec) && *trips == Trips::Loop;
                let runtime = strided && !has_barrier(body);
                self.stack.push(Frame { var: *var, kind: *kind, extent: *extent, runtime });
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

    /// How many enclosing loops (outermost first) an index depends on.
    fn level(&self, i: &Index) -> usize {
        self.stack.iter().rposition(|f| i.mentions(f.var)).map_or(0, |l| l + 1)
    }

    /// Executions, out of `n` of the statement, of what depends on the first `level` loops: the
    /// sequential loops nested deeper are hoisted out (parallel ones are other threads).
    fn at(&self, n: f64, level: usize) -> f64 {
        let inner: f64 = self.stack[level.min(self.stack.len())..]
            .iter()
            .filter(|f| matches!(f.kind, LoopKind::Seq | LoopKind::Vec))
            .map(|f| f.extent.max(1) as f64)
            .product();
        n / inner
    }

    /// Counts an index's arithmetic (hoisted); its level.
    fn index(&mut self, i: &Index, n: f64) -> usize {
        let level = self.level(i);
        self.s.lane_ops += self.at(n, level) * index_ops(i);
        level
    }

    /// Counts the operations and loads of `e`, evaluated `n` times (hoisted); its level.
    fn expr(&mut self, e: &'k Expr, n: f64) -> usize {
        if let Some(level) = self.computed(e) {
            return level;
        }
        let (level, ops) = match e {
            Expr::Load(p) => {
                let level = self.index(&p.index, n);
                self.access(p, self.at(n, level), false);
                (level, 0.0)
            }
            Expr::Bin(_, a, b) => (self.expr(a, n).max(self.expr(b, n)), 1.0),
            Expr::Un(_, a) | Expr::Cast(_, a) => (self.expr(a, n), 1.0),
            Expr::Lane(a, _) | Expr::Splat(a, _) => (self.expr(a, n), 0.0),
            Expr::Select(c, a, b) => (self.expr(c, n).max(self.expr(a, n)).max(self.expr(b, n)), 1.0),
            Expr::Vector(_, es) => (es.iter().map(|x| self.expr(x, n)).max().unwrap_or(0), 0.0),
            Expr::Int(i) => (self.index(i, n), 0.0),
            Expr::InRange(i, ..) => (self.index(i, n), 2.0),
            Expr::Lit(_) => (0, 0.0),
        };
        self.s.lane_ops += self.at(n, level) * ops;
        self.remember(e, level);
        level
    }

    /// Can the store `p = e` run in vector lanes (see the module documentation)? `Some(true)`
    /// along a sequential loop of each work item, `Some(false)` across work items.
    fn vectorizable(&self, p: &Place, e: &Expr) -> Option<bool> {
        let mut places = vec![p];
        loads(e, &mut places);
        let unit = |var: VarId| places.iter().all(|q| stride(q, var) <= 1);
        let inner = self.stack.last()?;
        let ok = match inner.kind {
            LoopKind::Local(0) | LoopKind::Global(0) => unit(inner.var) && !self.stack.iter().any(|f| f.runtime),
            LoopKind::Seq | LoopKind::Vec => {
                let along = p.index.mentions(inner.var);
                // An accumulator across the loop lives outside it: a variable declared in its
                // body is another one at each iteration.
                let depth = self.declared.iter().rev().find(|(b, _)| *b == p.buf).map_or(0, |(_, d)| *d);
                let across = self.lanes.reassociate && depth < self.stack.len();
                inner.extent > 1 && (along || across) && unit(inner.var)
            }
            _ => false,
        };
        ok.then_some(matches!(inner.kind, LoopKind::Seq | LoopKind::Vec))
    }

    /// Counts an access executed `n` times (already hoisted).
    fn access(&mut self, p: &Place, n: f64, store: bool) {
        let buf = self.k.buf(p.buf);
        if p.width > 1 {
            self.s.vector_accesses += n;
        }
        match buf.space {
            Space::Local => self.s.local_accesses += n,
            // An array's element promoted to a scalar (no dimensions) is a register.
            Space::Private if buf.dims.is_empty() => {}
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
                self.touch(p);
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

    /// Records the global access `p` in its family of [`Touched`].
    fn touch(&mut self, p: &Place) {
        let index = Index { constant: 0, ..p.index.clone() };
        let known = self.touched.iter_mut().find(|t| t.buf == p.buf && t.width == p.width && t.index == index);
        match known {
            Some(t) if t.constants.contains(&p.index.constant) => {}
            Some(t) => t.constants.push(p.index.constant),
            None => {
                let group = self.distinct_lines(p, Scope::Group);
                let bundle = self.distinct_lines(p, Scope::Bundle);
                let item = self.distinct_lines(p, Scope::Item);
                let constants = vec![p.index.constant];
                self.touched.push(Touched { buf: p.buf, width: p.width, index, group, bundle, item, constants });
            }
        }
    }

    /// The values of a loop's variable that one scope runs (see [`KernelStats::of`]).
    fn share(&self, f: &Frame, scope: Scope) -> f64 {
        let l = &self.k.launch;
        let e = f.extent.max(1) as f64;
        let per = |n: i64| (e / n.max(1) as f64).ceil().max(1.0);
        // Consecutive work items along the fastest-varying local id run together.
        let bundle = |n: i64| (per(n) * l.local[0].clamp(1, i64::from(self.lanes.simd.max(1))) as f64).min(e);
        match (f.kind, scope) {
            (LoopKind::Seq | LoopKind::Vec, _) => e,
            (LoopKind::Local(_), Scope::Group) => e,
            (LoopKind::Local(0), Scope::Bundle) => bundle(l.local[0]),
            (LoopKind::Local(d), _) => per(l.local[d as usize]),
            (LoopKind::Global(d), Scope::Group) => per(l.global[d as usize] / l.local[d as usize].max(1)),
            (LoopKind::Global(0), Scope::Bundle) => bundle(l.global[0]),
            (LoopKind::Global(d), _) => per(l.global[d as usize]),
            (LoopKind::Group(d), _) => per(l.global[d as usize] / l.local[d as usize].max(1)),
        }
    }

    /// The distinct lines a scope touches with the global access `p` (see [`KernelStats::of`]).
    fn distinct_lines(&self, p: &Place, scope: Scope) -> f64 {
        let buf = self.k.buf(p.buf);
        let bytes = buf.kind.bytes() as f64;
        let line = f64::from(self.lanes.line.max(1));
        let width = f64::from(p.width.max(1));
        let mut elements = 1.0;
        // The loop of the smallest stride (in scalars): its values and that stride.
        let mut run: Option<(f64, f64)> = None;
        for f in self.stack.iter().filter(|f| p.index.mentions(f.var)) {
            let values = self.share(f, scope);
            elements *= values;
            let step = scalar_stride(p, f.var) as f64;
            if step > 0.0 && run.is_none_or(|(_, s)| step < s) {
                run = Some((values, step));
            }
        }
        match run {
            // Runs of `values` elements, `step` scalars apart, that share lines.
            Some((values, step)) if step * bytes < line => {
                elements / values * (((values - 1.0) * step + width) * bytes / line).ceil()
            }
            // An element (or vector) per line.
            _ => elements * (width * bytes / line).ceil(),
        }
    }

    /// The stride of `p` along the lane variable: 0 when no enclosing loop is over the
    /// fastest-varying thread id.
    fn lane_stride(&self, p: &Place) -> i64 {
        let lane = self.stack.iter().rev().find(|f| matches!(f.kind, LoopKind::Local(0) | LoopKind::Global(0)));
        lane.map_or(0, |l| stride(p, l.var))
    }
}

/// The stride (in elements of the access) of `p`'s index along `var` (0 when it does not use
/// it); two steps are compared, as divisions and remainders may make one step special.
fn stride(p: &Place, var: VarId) -> i64 {
    if !p.index.mentions(var) {
        return 0;
    }
    let at = |v: i64| p.index.eval(&|x: VarId| if x == var { v } else { 0 });
    let d = ((at(2) - at(1)).abs()).max((at(1) - at(0)).abs());
    (d / p.width.max(1) as i64).max(i64::from(d != 0))
}

/// The step of `p`'s index along `var`, in scalars (0 when it does not use it).
fn scalar_stride(p: &Place, var: VarId) -> i64 {
    if !p.index.mentions(var) {
        return 0;
    }
    let at = |v: i64| p.index.eval(&|x: VarId| if x == var { v } else { 0 });
    ((at(2) - at(1)).abs()).max((at(1) - at(0)).abs())
}

/// The places an expression loads from.
fn loads<'e>(e: &'e Expr, out: &mut Vec<&'e Place>) {
    match e {
        Expr::Load(p) => out.push(p),
        Expr::Bin(_, a, b) => {
            loads(a, out);
            loads(b, out);
        }
        Expr::Un(_, a) | Expr::Cast(_, a) | Expr::Lane(a, _) | Expr::Splat(a, _) => loads(a, out),
        Expr::Select(c, a, b) => {
            loads(c, out);
            loads(a, out);
            loads(b, out);
        }
        Expr::Vector(_, es) => es.iter().for_each(|x| loads(x, out)),
        Expr::Lit(_) | Expr::Int(_) | Expr::InRange(..) => {}
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

/// Integer operations to compute an index: one per term, about four per division or remainder
/// by a constant (a multiplication and shifts), two per clamp.
fn index_ops(i: &Index) -> f64 {
    i.terms
        .iter()
        .map(|(a, _)| {
            1.0 + match a {
                Atom::Var(_) => 0.0,
                // The atom itself (the conversion is free): its ops, less the one of its term.
                Atom::Wide(a) => index_ops(&Index { terms: vec![((**a).clone(), 1)], constant: 0 }) - 1.0,
                Atom::Div(e, _) | Atom::Rem(e, _) => 4.0 + index_ops(e),
                Atom::Clamp(e, ..) => 2.0 + index_ops(e),
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(src: &str, local: Option<Vec<i64>>) -> Kernel {
        let p = mapsat_ir::parse(src).unwrap();
        mapsat_codegen::lower(&p, &mapsat_codegen::Options { local, ..Default::default() }).unwrap()
    }

    const LANES: Lanes = Lanes { simd: 8, line: 64, reassociate: false };

    #[test]
    fn a_contiguous_reduction_is_in_vector_lanes_only_where_sums_may_be_reassociated() {
        let src = "size N = 64, K = 256\ndef f(xs: [[f32]K]N) = \
                   mapGlb(0, fun(x => reduceSeq(fun(a, v => a + v), 0.0, x)), xs)";
        let k = kernel(src, Some(vec![1]));
        // Strict: only the store of each sum (along the global id) is in lanes.
        let strict = KernelStats::of(&k, LANES).vector_ops;
        assert_eq!(strict, 64.0);
        // Reassociated: the addition of every iteration (64 x 256) as well, and the index
        // arithmetic of its load.
        let s = KernelStats::of(&k, Lanes { reassociate: true, ..LANES });
        assert!(s.vector_ops >= strict + 64.0 * 256.0, "{}", s.vector_ops);
    }

    /// Register blocking: each thread keeps 4 sums and reads its input once per step for all
    /// four (the unrolled statements repeat the load; the device compiler loads it once).
    const BLOCKED: &str = "size N = 64, K = 32, B = 4\ndef f(xs: [[f32]K]N, ws: [[f32]K]B) = \
        mapGlb(0, fun(x => toPrivate(reduceSeq(fun(acc, p => mapSeq(fun(q => q.0 + p.0 * q.1), zip(acc, p.1))), \
        mapSeq(fun(k => 0.0), ws), zip(x, transpose(ws))))), xs)";

    #[test]
    fn a_load_the_unrolled_statements_of_a_block_repeat_is_counted_once() {
        let s = KernelStats::of(&kernel(BLOCKED, Some(vec![64])), LANES);
        // Per thread and step: one load of `xs`, four of `ws` (not four of each).
        assert_eq!(s.global_loads, 64.0 * 32.0 * (1.0 + 4.0));
        // Four multiply-adds per step, and the sums' accesses are registers.
        assert_eq!(s.flops, 64.0 * 32.0 * 4.0 * 2.0);
    }

    #[test]
    fn values_declared_in_a_loop_are_not_sums_across_it() {
        // Each work item walks the columns of `b` (sequential), and for each computes the
        // 4 products of a dot product (an unrolled map into a private array, scalars
        // declared in the column loop's body) and their sum (a variable declared there too).
        let src = "size N = 8, K = 4, M = 16\ndef f(a: [[f32]K]N, b: [[f32]M]K) = \
                   mapGlb(0, fun(r => mapSeq(fun(c => reduceSeq(add, 0.0, \
                   mapSeq(fun(p => p.0 * p.1), zip(r, c)))), transpose(b))), a)";
        let k = kernel(src, Some(vec![8]));
        let s = KernelStats::of(&k, Lanes { reassociate: true, ..LANES });
        // Only the store of each result runs along the column loop: 8 x 16 stores, with
        // their index and the loads' shares at most; not the 8 x 16 x 4 products and sums.
        assert!(s.vector_ops_in_item < 8.0 * 16.0 * 4.0, "{s:?}");
        assert!(s.vector_ops_in_item > 0.0, "{s:?}");
    }

    #[test]
    fn working_sets_count_the_lines_of_unrolled_accesses_once() {
        let s = KernelStats::of(&kernel(BLOCKED, Some(vec![64])), LANES);
        // A work item: its row of `xs` (32 floats, 2 lines), all of `ws` (its 4 unrolled rows
        // of 32 floats: 8 lines, not 4 x 32), its 4 results (one line).
        assert_eq!(s.item_lines, 2.0 + 8.0 + 1.0);
        // 8 consecutive work items (the lanes): 8 rows of `xs`, `ws`, 32 results (2 lines).
        assert_eq!(s.bundle_lines, 16.0 + 8.0 + 2.0);
        // The one work group: all of `xs` (64 x 32 floats, 128 lines), `ws`, and the 256
        // results (16 lines).
        assert_eq!(s.group_lines, 128.0 + 8.0 + 16.0);
        // Groups of 8: a group's rows of `xs` (16 lines), `ws`, its 32 results (2 lines).
        let s = KernelStats::of(&kernel(BLOCKED, Some(vec![8])), LANES);
        assert_eq!(s.group_lines, 16.0 + 8.0 + 2.0);
    }

    #[test]
    fn a_sum_vectorized_along_its_own_loop_is_in_the_work_item() {
        let reassociate = Lanes { reassociate: true, ..LANES };
        let s = KernelStats::of(&kernel(BLOCKED, Some(vec![1])), reassociate);
        // The four sums' updates (in the loop over K) are in lanes of each work item; the
        // stores of the results (4 apart along the global id) are in no lanes.
        assert!(s.vector_ops_in_item >= 64.0 * 32.0 * 4.0 * 2.0, "{s:?}");
        assert_eq!(s.vector_ops_in_item, s.vector_ops);
        // Across work items, where they are: an element-wise map.
        let map = "size N = 1024\ndef f(xs: [f32]N) = mapGlb(0, fun(x => x * 2.0), xs)";
        let s = KernelStats::of(&kernel(map, Some(vec![64])), reassociate);
        assert!(s.vector_ops > 0.0 && s.vector_ops_in_item == 0.0, "{s:?}");
        assert_eq!(KernelStats::of(&kernel(BLOCKED, Some(vec![1])), LANES).vector_ops_in_item, 0.0);
    }

    #[test]
    fn no_statement_is_in_lanes_across_work_items_inside_a_loop_over_several_indices_per_work_item() {
        let rows = "size N = 16, M = 64\ndef f(a: [[f32]M]N) = \
                    mapWrg(0, fun(t => mapLcl(1, fun(r => mapLcl(0, fun(x => x * 2.0), r)), t)), split(4, a))";
        let ops = |local: Vec<i64>| KernelStats::of(&kernel(rows, Some(local)), LANES).vector_ops;
        // One element per work item: its work items run in lanes.
        assert!(ops(vec![64, 4]) >= 16.0 * 64.0, "{}", ops(vec![64, 4]));
        // 16 work items along a row of 64: each runs a loop of 4 around its element, and the
        // loop over the work items is not the innermost.
        assert_eq!(ops(vec![16, 4]), 0.0);
        // One work item per group along the rows: each runs a loop over the group's 4 rows.
        assert_eq!(ops(vec![64, 1]), 0.0);
        // A sequential loop every work item runs alike does not stop them (the driver runs
        // them in a loop inside it).
        let seq = "size N = 16, M = 64\ndef f(a: [[f32]M]N) = \
                   mapWrg(0, fun(t => mapSeq(fun(r => mapLcl(0, fun(x => x * 2.0), r)), t)), split(4, a))";
        let s = KernelStats::of(&kernel(seq, Some(vec![64])), LANES);
        assert!(s.vector_ops >= 16.0 * 64.0, "{s:?}");
        assert_eq!(KernelStats::of(&kernel(rows, Some(vec![16, 4])), LANES).lane_threads, 16.0);
    }

    #[test]
    fn an_elementwise_map_is_coalesced() {
        let k = kernel("size N = 1024\ndef f(xs: [f32]N) = mapGlb(0, fun(x => x * 2.0), xs)", Some(vec![64]));
        let s = KernelStats::of(&k, LANES);
        assert_eq!((s.global_loads, s.global_stores), (1024.0, 1024.0));
        assert_eq!(s.global_coalesced, 2048.0);
        // Per element: the load's and the store's index (one term each) and the multiplication.
        assert_eq!(s.lane_ops, 3.0 * 1024.0);
        // 8 lanes of 4 bytes: half a 64-byte line, one transaction per group of lanes.
        assert_eq!(s.global_transactions, 2048.0 / 8.0);
        assert_eq!((s.threads_per_group, s.groups), (64.0, 16.0));
        assert_eq!(s.busy_fraction, 1.0);
    }

    #[test]
    fn nested_parallel_loops_are_all_busy() {
        let src = "size N = 16, M = 32\ndef f(a: [[f32]M]N) = mapGlb(1, mapGlb(0, fun(x => x + 1.0)), a)";
        let s = KernelStats::of(&kernel(src, Some(vec![8, 4])), LANES);
        assert_eq!(s.busy_fraction, 1.0);
        // Per element: two index terms for the load, two for the store, one addition.
        assert_eq!(s.lane_ops, 5.0 * 512.0);
        // Work items beyond the extents (global rounded up to 12 x 40) are idle, not redundant.
        let s = KernelStats::of(&kernel(src, Some(vec![10, 6])), LANES);
        assert!((s.busy_fraction - 512.0 / 720.0).abs() < 1e-9, "{}", s.busy_fraction);
        assert_eq!(s.lane_ops, 5.0 * 512.0);
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
