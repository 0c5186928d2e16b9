//! Caller and callee trees of one function (`show --callers NAME`, `--callees NAME`):
//! from the call stacks in which the function appears, the paths towards the roots
//! (who called it) or towards the leaves (what it spent its time in), merged into a
//! tree with sample counts and shares weighted by period.

use super::aggregate::{CallGraph, FrameKind, FrameName};
use serde::Serialize;
use std::collections::BTreeMap;

/// Which way a tree grows from its function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Towards the callers: who called it.
    Callers,
    /// Towards the callees: what it called.
    Callees,
}

/// One function of the tree with the samples of the paths through it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// The function's name.
    pub name: String,
    /// Its object's basename.
    pub object: String,
    /// True for a function inlined into its caller.
    pub inlined: bool,
    /// Samples of the paths through it.
    pub samples: u64,
    /// The samples' summed periods (ns of a clock, else events).
    pub period: u64,
    /// period / the function's period (the root's), 0–1.
    pub share: f64,
    /// The next level of the tree, by period, largest first.
    pub children: Vec<TreeNode>,
}

/// A tree node in JSON: the tree as a flat list in depth-first order, each node naming
/// its parent's index (the function itself is node 0, without a parent). Nested JSON
/// would be as deep as the stacks, beyond the nesting limit of common JSON readers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JsonNode {
    /// The function's name.
    pub name: String,
    /// Its object's basename.
    pub object: String,
    /// True for a function inlined into its caller.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
    /// Samples of the paths through it.
    pub samples: u64,
    /// The samples' summed periods (ns of a clock, else events).
    pub period: u64,
    /// period / the root's period, 0–1.
    pub share: f64,
    /// Index of its parent node; None for the root (node 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
}

/// [`TreeNode`]s in depth-first order as [`JsonNode`]s.
pub fn flatten(tree: &TreeNode) -> Vec<JsonNode> {
    let mut out = Vec::new();
    let mut todo = vec![(tree, None)];
    while let Some((node, parent)) = todo.pop() {
        let index = out.len();
        out.push(JsonNode {
            name: node.name.clone(),
            object: node.object.clone(),
            inlined: node.inlined,
            samples: node.samples,
            period: node.period,
            share: node.share,
            parent,
        });
        todo.extend(node.children.iter().rev().map(|c| (c, Some(index))));
    }
    out
}

/// The tree of `function`'s callers or callees; None when no stack contains it. In a
/// recursive stack the outermost call counts, so every sample is counted once and
/// recursion shows among the callees.
pub fn tree(graph: &CallGraph, function: &str, direction: Direction) -> Option<TreeNode> {
    // Frames are keyed by the graph's borrowed names: a tree of 1.2 M distinct frames
    // copies each name once, into its node, instead of once per stack it lies on.
    #[derive(Default)]
    struct Building<'a> {
        samples: u64,
        period: u64,
        children: BTreeMap<FrameName<'a>, Building<'a>>,
    }
    let mut root = Building::default();
    let mut found: Option<FrameName> = None;
    for stack in graph.stacks_by_name() {
        let frames = &stack.frames;
        let Some(at) = frames.iter().position(|f| f.kind != FrameKind::Process && f.function == function) else {
            continue;
        };
        found.get_or_insert(frames[at]);
        root.samples += stack.samples;
        root.period += stack.period;
        let path: Box<dyn Iterator<Item = &FrameName>> = match direction {
            Direction::Callers => Box::new(frames[..at].iter().rev()),
            Direction::Callees => Box::new(frames[at + 1..].iter()),
        };
        let mut node = &mut root;
        for frame in path {
            node = node.children.entry(*frame).or_default();
            node.samples += stack.samples;
            node.period += stack.period;
        }
    }
    // Depth first without recursion: a tree as deep as its stacks (8,000 frames) would
    // overflow the stack.
    fn finish(frame: FrameName, building: Building, total: u64) -> TreeNode {
        let node = |frame: FrameName, b: &Building| TreeNode {
            name: frame.function.to_string(),
            object: frame.object.to_string(),
            inlined: frame.kind == FrameKind::Inlined,
            samples: b.samples,
            period: b.period,
            share: b.period as f64 / total.max(1) as f64,
            children: Vec::new(),
        };
        // (the node, its children still to build), from the root down.
        let mut path: Vec<(TreeNode, std::collections::btree_map::IntoIter<FrameName, Building>)> = Vec::new();
        let root = node(frame, &building);
        path.push((root, building.children.into_iter()));
        loop {
            let next = path.last_mut().and_then(|(_, todo)| todo.next());
            match next {
                Some((frame, child)) => {
                    let built = node(frame, &child);
                    path.push((built, child.children.into_iter()));
                }
                None => {
                    let (mut done, _) = path.pop().expect("the root is on the path");
                    done.children.sort_by(|a, b| {
                        (b.period, b.samples).cmp(&(a.period, a.samples)).then_with(|| a.name.cmp(&b.name))
                    });
                    match path.last_mut() {
                        Some((parent, _)) => parent.children.push(done),
                        None => return done,
                    }
                }
            }
        }
    }
    let total = root.period;
    Some(finish(found?, root, total))
}

#[cfg(any(test, feature = "fixtures"))]
/// Unreadable object: frames are named `x+0xOFFSET`. Stacks (root last):
/// leaf ← a ← main (3), leaf ← b ← main (1), a ← a ← main (2, recursion).
pub fn example_graph() -> CallGraph {
    use crate::aggregate::locate_with_graph;
    use crate::format::{FrameRef, ObjectRef, Profile, Space, StackCount};
    use crate::symbolize::Symbolizer;
    let user = |offset| FrameRef { space: Space::User, object: Some(0), offset };
    let stack = |frames: Vec<u32>, count| StackCount { pid: 1, tid: 1, frames, count, period: count };
    let profile = Profile {
        event: "cpu-clock".into(),
        frequency_hz: 1000,
        objects: vec![ObjectRef { path: "/nonexistent/x".into() }],
        frames: vec![user(0x10), user(0x20), user(0x30), user(0x40)],
        stacks: vec![stack(vec![0, 1, 3], 3), stack(vec![0, 2, 3], 1), stack(vec![1, 1, 3], 2)],
        ..Profile::default()
    };
    locate_with_graph(&profile, &mut Symbolizer::default()).1.unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(node: &TreeNode) -> Vec<(String, u64)> {
        node.children.iter().map(|c| (c.name.clone(), c.samples)).collect()
    }

    #[test]
    fn callers_split_by_caller_and_count_recursion_once() {
        let g = example_graph();
        let leaf = tree(&g, "x+0x10", Direction::Callers).unwrap();
        assert_eq!(leaf.samples, 4);
        assert_eq!(names(&leaf), [("x+0x20".to_string(), 3), ("x+0x30".to_string(), 1)]);
        assert_eq!(leaf.children[0].share, 0.75);
        assert_eq!(names(&leaf.children[0]), [("x+0x40".to_string(), 3)]);
        let a = tree(&g, "x+0x20", Direction::Callers).unwrap();
        assert_eq!(a.samples, 5, "the recursive stack counts once");
        assert_eq!(names(&a), [("x+0x40".to_string(), 5)]);
        assert!(tree(&g, "nothing", Direction::Callers).is_none());
    }

    #[test]
    fn callees_follow_the_outermost_call() {
        let g = example_graph();
        let main = tree(&g, "x+0x40", Direction::Callees).unwrap();
        assert_eq!(main.samples, 6);
        assert_eq!(names(&main), [("x+0x20".to_string(), 5), ("x+0x30".to_string(), 1)]);
        let a = tree(&g, "x+0x20", Direction::Callees).unwrap();
        assert_eq!(names(&a), [("x+0x10".to_string(), 3), ("x+0x20".to_string(), 2)]);
        let flat = flatten(&main);
        let summary: Vec<(&str, u64, Option<usize>)> =
            flat.iter().map(|n| (n.name.as_str(), n.samples, n.parent)).collect();
        assert_eq!(
            summary,
            [
                ("x+0x40", 6, None),
                ("x+0x20", 5, Some(0)),
                ("x+0x10", 3, Some(1)),
                ("x+0x20", 2, Some(1)),
                ("x+0x30", 1, Some(0)),
                ("x+0x10", 1, Some(4))
            ]
        );
    }
}
