//! Lowering of a checked, fully mapped program to the kernel IR.
//!
//! The program is walked once from its root ([`expr`]), at concrete sizes ([`types`]), with
//! the output buffer as the destination of the result:
//!
//! - Values are *views* (Lift's view system, [`view`]): a parameter or an allocated buffer seen
//!   through layout primitives and the indexing done by maps, turned into a memory access only
//!   when a scalar is needed. Writes go through *output views*, so a map nested in layout
//!   primitives writes straight into its final place. An unlabelled `map` whose function only
//!   reorganizes data is a view too ([`layout`]).
//! - Mapped maps and `reduceSeq` become loops ([`maps`]) run by the threads of the launch shape
//!   ([`launch`]), which the nesting of the parallel maps must agree with.
//! - Memory ([`memory`]): `toGlobal`/`toLocal`/`toPrivate` allocate buffers, one copy per
//!   iteration of the enclosing parallel loops that share the address space; a map without a
//!   destination writes into a fresh buffer of the space it runs in.
//! - Barriers ([`barrier`]): after a `mapLcl` loop that wrote shared memory a slot is left,
//!   turned into a barrier when a later read needs it; work-group loops that run again and
//!   communicate through local memory end with one.
//! - Every buffer and loop variable gets a distinct C name ([`names`]).

mod barrier;
mod expr;
mod launch;
mod layout;
mod maps;
mod memory;
mod names;
pub(crate) use names::sanitize;
mod types;
mod view;

use crate::error::{CodegenError, CodegenErrorKind as K};
use crate::index::Ranges;
use crate::kir::*;
use crate::Options;
use barrier::{Dirty, Slot};
use maps::LoopCtx;
use mapsat_ir::ast::{NodeId, Span};
use mapsat_ir::check::TypeInfo;
use mapsat_ir::{Program, Sizes, Type};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use types::{dims_of, elem_of};
use view::View;

type R<T> = Result<T, CodegenError>;

/// The lowering state.
pub(crate) struct Lower<'a> {
    p: &'a Program,
    info: TypeInfo,
    bufs: Vec<Buffer>,
    /// Loop depth at which each buffer was allocated.
    alloc_depth: Vec<usize>,
    args: Vec<BufId>,
    locals: Vec<BufId>,
    params: Vec<Option<BufId>>,
    ranges: Ranges,
    env: Vec<View>,
    loops: Vec<LoopCtx>,
    blocks: Vec<Vec<Stmt>>,
    names: BTreeSet<String>,
    /// Names of the loop variables, by `VarId`.
    vars: Vec<String>,
    /// How each map was lowered.
    maps: Vec<(String, MapLowering)>,
    launch: Launch,
    flops: u64,
    mult: u64,
    slots: Vec<Slot>,
    dirty: BTreeMap<BufId, Dirty>,
    /// Where global temporaries were written since the last parallel loop ended.
    temp_writes: BTreeMap<BufId, Vec<barrier::TempWrite>>,
    /// Shared buffers written inside the current outermost parallel loop.
    written: BTreeSet<BufId>,
    /// True while an access is resolved only to see where it lands (`lanes_consecutive`): the
    /// barrier analysis does not count it, the access made after it does.
    probing: bool,
    /// Every size variable's value.
    sizes: Sizes,
    /// The same values as sizes, for substitution into the program's size expressions.
    subst: HashMap<String, mapsat_ir::Size>,
}

/// The scalar kind and lanes of the elements of parameter `name` of type `t` (an array or not,
/// elements `elem`): scalars, or vectors in an array (their scalars in order, as the output of
/// one is stored); other parameters a kernel cannot take are refused.
pub(crate) fn param_element(name: &str, t: &Type, array: bool, elem: &Type) -> R<(mapsat_ir::ScalarKind, u32)> {
    match elem {
        Type::Scalar(k) => Ok((*k, 1)),
        Type::Vector(k, w) if array => Ok((*k, *w)),
        Type::Vector(..) => Err(K::Unsupported(format!(
            "parameter `{name}` of type {t}: a kernel takes vectors in arrays; declare `{name}: [{t}]1` and read `at(0, {name})`"
        ))
        .into()),
        _ => Err(K::Unsupported(format!("parameter `{name}` of type {t}")).into()),
    }
}

impl<'a> Lower<'a> {
    /// Lowers `p` (which must be fully mapped) at the sizes and with the launch options `opts`.
    pub(crate) fn run(p: &'a Program, opts: &Options) -> R<Kernel> {
        let mut lw = Lower::new(p, opts)?;
        lw.declare_params()?;
        let (out, result) = lw.declare_output()?;
        let r = lw.gen(p.root, Vec::new(), Some(View::Mem(out)))?;
        if !r.written {
            lw.copy(&r.view, &View::Mem(out), &result)?;
        }
        Ok(lw.finish())
    }

    /// The state before lowering: sizes resolved, the program checked at them, the launch shape.
    fn new(p: &'a Program, opts: &Options) -> R<Lower<'a>> {
        let sizes = p.resolve_sizes(&opts.sizes).map_err(|e| CodegenError::from(K::MissingSize(e.0)))?;
        let info = mapsat_ir::check::check_with_sizes(p, &sizes).map_err(|e| CodegenError::from(K::Type(e)))?;
        let maps = launch::collect_maps(p, &info)?;
        let launch = launch::launch_shape(
            &maps,
            opts.local.as_deref(),
            opts.max_work_group_size,
            opts.max_work_item_sizes,
            opts.max_groups,
        )?;
        if let Some(max) = opts.max_work_group_size {
            crate::limits::check_group_size(&launch.local, max)?;
        }
        if let Some(max) = &opts.max_work_item_sizes {
            crate::limits::check_work_items(&launch.local, max)?;
        }
        if let Some(bits) = opts.address_bits {
            crate::limits::check_address_bits(&launch.global, bits)?;
        }
        if let Some(max) = &opts.max_groups {
            crate::limits::check_groups(&launch, max)?;
        }
        let subst: HashMap<String, mapsat_ir::Size> = p
            .sizes
            .iter()
            .filter_map(|v| Some((v.name.clone(), mapsat_ir::Size::constant(sizes.get(&v.name)?))))
            .collect();
        Ok(Lower {
            p,
            info,
            bufs: Vec::new(),
            alloc_depth: Vec::new(),
            args: Vec::new(),
            locals: Vec::new(),
            params: Vec::new(),
            ranges: Ranges::default(),
            env: Vec::new(),
            loops: Vec::new(),
            blocks: vec![Vec::new()],
            names: names::RESERVED.iter().map(|s| s.to_string()).collect(),
            vars: Vec::new(),
            maps: Vec::new(),
            launch,
            flops: 0,
            mult: 1,
            slots: Vec::new(),
            dirty: BTreeMap::new(),
            temp_writes: BTreeMap::new(),
            written: BTreeSet::new(),
            probing: false,
            sizes,
            subst,
        })
    }

    /// One input buffer (a kernel argument) per program parameter.
    fn declare_params(&mut self) -> R<()> {
        let p = self.p;
        for (i, q) in p.params.iter().enumerate() {
            let t = q.ty.substitute(&self.subst);
            let (dims, elem) = dims_of(&t)?;
            let (kind, width) = param_element(&q.name, &t, !dims.is_empty(), &elem)?;
            let name = self.fresh(&q.name);
            let by_value = dims.is_empty();
            let id = self.add_buf(Buffer {
                name,
                space: Space::Global,
                role: Role::Input,
                kind,
                width,
                dims,
                param: Some(i),
                by_value,
            });
            self.args.push(id);
            self.params.push(Some(id));
        }
        Ok(())
    }

    /// The output buffer (a kernel argument) and the program's result type.
    fn declare_output(&mut self) -> R<(BufId, Type)> {
        let result = self.info.result.clone();
        let (dims, elem) = dims_of(&result)?;
        let (kind, width) = elem_of(&elem)?;
        let name = self.fresh("out");
        let out = self.add_buf(Buffer {
            name,
            space: Space::Global,
            role: Role::Output,
            kind,
            width,
            dims,
            param: None,
            by_value: false,
        });
        self.args.push(out);
        Ok((out, result))
    }

    /// The kernel: barrier slots resolved, arguments in order.
    fn finish(mut self) -> Kernel {
        let body = self.blocks.pop().unwrap_or_default();
        let body = self.finish_slots(body);
        let mut args = self.args.clone();
        // Inputs, then the output, then temporaries (already in that order but for temps made early).
        args.sort_by_key(|b| match self.bufs[b.0].role {
            Role::Input => 0,
            Role::Output => 1,
            Role::Temp => 2,
        });
        Kernel {
            name: names::sanitize(&self.p.name),
            buffers: self.bufs,
            args,
            locals: self.locals,
            body,
            vars: self.vars,
            wide_vars: Default::default(),
            maps: self.maps,
            launch: self.launch,
            flops: self.flops,
            sizes: self.sizes,
        }
    }

    /// Records a new buffer, allocated at the current loop depth.
    fn add_buf(&mut self, b: Buffer) -> BufId {
        self.bufs.push(b);
        self.alloc_depth.push(self.loops.len());
        BufId(self.bufs.len() - 1)
    }

    /// Appends a statement to the innermost open block.
    fn emit(&mut self, s: Stmt) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(s);
        }
    }

    /// The type of a node at the concrete sizes.
    fn ty(&self, id: NodeId) -> R<Type> {
        self.info.of(id).cloned().ok_or_else(|| K::Internal(format!("node {} has no type", id.0)).into())
    }

    /// The source span of a node.
    fn span(&self, id: NodeId) -> Option<Span> {
        Some(self.p.span(id))
    }

    /// Sizes in primitives are written with variables; the checker substituted them in types only.
    fn concrete(&self, s: &mapsat_ir::Size) -> mapsat_ir::Size {
        s.substitute(&self.subst)
    }
}
