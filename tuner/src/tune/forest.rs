//! The learned model's trees, flattened for prediction.
//!
//! `perpetual` keeps a tree's nodes in a hash map and allocates a vector per tree per
//! prediction; scoring thousands of candidates per search batch then spends most of its time
//! in hashing. [`Forest`] copies the trees once after training into one array of nodes, each
//! tree's nodes in depth-first order, and gives the same sums as `PerpetualBooster::predict`
//! (base score plus one leaf weight per tree). A walk takes exactly its tree's depth in steps,
//! each chosen without a branch (a leaf leads to itself), so that the processor overlaps the
//! walks of consecutive trees instead of mispredicting every split.
//!
//! A booster it cannot copy exactly (categorical splits, a linear regression head, which a
//! ranking objective never fits) gives `None`, and the booster predicts itself.

use perpetual::tree::core::Tree;
use perpetual::PerpetualBooster;

/// One node. A split sends a row with `row[feature] < value` to `next[LEFT]`, greater or
/// equal to `next[RIGHT]`, NaN to `next[MISSING]` (indices into [`Forest::nodes`]); a leaf,
/// whose weight is `value`, sends every row to itself.
#[derive(Clone, Copy, Debug)]
struct Node {
    value: f64,
    feature: u32,
    next: [u32; 3],
}

/// Positions in [`Node::next`]: `2 * (x < value) + (x >= value)`, whichever `x` is.
const MISSING: usize = 0;
const RIGHT: usize = 1;
const LEFT: usize = 2;

/// A tree: its root in [`Forest::nodes`] and its depth (steps from the root to its deepest leaf).
#[derive(Clone, Copy, Debug)]
struct Root {
    node: u32,
    depth: u32,
}

/// The booster's trees, flattened: see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct Forest {
    base: f64,
    nodes: Vec<Node>,
    roots: Vec<Root>,
}

impl Forest {
    /// A copy of `booster`'s trees, or `None` where it predicts with more than trees.
    pub fn of(booster: &PerpetualBooster) -> Option<Forest> {
        if booster.regression_head.is_some() || !booster.cfg.missing.is_nan() {
            return None;
        }
        let mut forest = Forest { base: booster.base_score, ..Forest::default() };
        for tree in booster.get_prediction_trees() {
            let (node, depth) = forest.copy(tree, 0, 0)?;
            forest.roots.push(Root { node, depth });
        }
        Some(forest)
    }

    /// Copies the subtree of `tree` at node `num`, `depth` steps below its root: its index in
    /// `nodes` and the depth of its deepest leaf. `None` for a categorical split, a node
    /// missing from the tree or a tree deeper than its number of nodes (a cycle).
    fn copy(&mut self, tree: &Tree, num: usize, depth: u32) -> Option<(u32, u32)> {
        let node = tree.nodes.get(&num).filter(|_| (depth as usize) < tree.nodes.len())?;
        let at = u32::try_from(self.nodes.len()).ok()?;
        self.nodes.push(Node { value: f64::from(node.weight_value), feature: 0, next: [at; 3] });
        if node.is_leaf {
            return Some((at, depth));
        }
        if node.left_cats.is_some() {
            return None;
        }
        let (left, l) = self.copy(tree, node.left_child, depth + 1)?;
        let (right, r) = self.copy(tree, node.right_child, depth + 1)?;
        let (missing, m) = match node.missing_node {
            n if n == node.left_child => (left, l),
            n if n == node.right_child => (right, r),
            n => self.copy(tree, n, depth + 1)?,
        };
        let feature = u32::try_from(node.split_feature).ok()?;
        let mut next = [0; 3];
        (next[MISSING], next[RIGHT], next[LEFT]) = (missing, right, left);
        self.nodes[at as usize] = Node { value: node.split_value, feature, next };
        Some((at, l.max(r).max(m)))
    }

    /// The prediction for one feature row (a feature beyond the row reads as missing).
    pub fn predict(&self, row: &[f64]) -> f64 {
        self.base + self.roots.iter().map(|root| self.leaf(*root, row)).sum::<f64>()
    }

    /// The weight of the leaf that `row` reaches in the tree at `root`.
    fn leaf(&self, root: Root, row: &[f64]) -> f64 {
        let mut at = root.node as usize;
        for _ in 0..root.depth {
            let n = &self.nodes[at];
            let x = row.get(n.feature as usize).copied().unwrap_or(f64::NAN);
            at = n.next[2 * usize::from(x < n.value) + usize::from(x >= n.value)] as usize;
        }
        self.nodes[at].value
    }

    /// Number of trees.
    pub fn trees(&self) -> usize {
        self.roots.len()
    }
}
