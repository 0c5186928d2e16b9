//! Caller and callee trees of one function (`show --callers NAME`, `--callees NAME`):
//! from the call stacks in which the function appears, the paths towards the roots
//! (who called it) or towards the leaves (what it spent its time in), merged into a
//! tree with sample counts.

use super::aggregate::{CallGraph, FrameKind, StackFrame};
use crate::render::{color, terminal};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Callers,
    Callees,
}

/// One function of the tree with the samples of the paths through it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    pub name: String,
    pub object: String,
    pub inlined: bool,
    pub samples: u64,
    /// samples / the function's samples (the root's), 0–1.
    pub share: f64,
    pub children: Vec<TreeNode>,
}

/// A tree node in JSON: the tree as a flat list in depth-first order, each node naming
/// its parent's index (the function itself is node 0, without a parent). Nested JSON
/// would be as deep as the stacks, beyond the nesting limit of common JSON readers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JsonNode {
    pub name: String,
    pub object: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
    pub samples: u64,
    pub share: f64,
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
    #[derive(Default)]
    struct Building {
        samples: u64,
        children: BTreeMap<StackFrame, Building>,
    }
    let mut root = Building::default();
    let mut found: Option<StackFrame> = None;
    for stack in graph.named_stacks() {
        let frames = &stack.frames;
        let Some(at) = frames.iter().position(|f| f.kind != FrameKind::Process && f.function == function) else {
            continue;
        };
        found.get_or_insert_with(|| frames[at].clone());
        root.samples += stack.samples;
        let path: Box<dyn Iterator<Item = &StackFrame>> = match direction {
            Direction::Callers => Box::new(frames[..at].iter().rev()),
            Direction::Callees => Box::new(frames[at + 1..].iter()),
        };
        let mut node = &mut root;
        for frame in path {
            node = node.children.entry(frame.clone()).or_default();
            node.samples += stack.samples;
        }
    }
    fn finish(frame: StackFrame, building: Building, total: u64) -> TreeNode {
        let mut children: Vec<TreeNode> = building.children.into_iter().map(|(f, b)| finish(f, b, total)).collect();
        children.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));
        TreeNode {
            name: frame.function,
            object: frame.object,
            inlined: frame.kind == FrameKind::Inlined,
            samples: building.samples,
            share: building.samples as f64 / total.max(1) as f64,
            children,
        }
    }
    let total = root.samples;
    Some(finish(found?, root, total))
}

/// Print the tree indented, one line per function; a chain of single children is
/// joined on one line (`a ← b ← c`), and branches under `min_share` are summarised.
pub fn print(tree: &TreeNode, direction: Direction, all_samples: u64, min_share: f64) {
    let what = match direction {
        Direction::Callers => "callers",
        Direction::Callees => "callees",
    };
    crate::outln!(
        "{}",
        color::bold(&format!(
            "{what} of {} ({} samples, {:.2}% of all)",
            terminal::escape(&tree.name),
            tree.samples,
            tree.samples as f64 / all_samples.max(1) as f64 * 100.0
        ))
    );
    let arrow = if direction == Direction::Callers { " ← " } else { " → " };
    for line in lines(tree, arrow, min_share) {
        crate::outln!("{line}");
    }
}

fn lines(tree: &TreeNode, arrow: &str, min_share: f64) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo: Vec<(&TreeNode, usize)> = tree.children.iter().rev().map(|c| (c, 1)).collect();
    while let Some((node, depth)) = todo.pop() {
        if node.share < min_share {
            continue;
        }
        let mut chain = vec![label(node)];
        let mut last = node;
        while let [only] = last.children.as_slice() {
            if only.samples != last.samples {
                break;
            }
            chain.push(label(only));
            last = only;
        }
        let share = crate::profile::paint_share(last.share, &format!("{:>6.2}%", last.share * 100.0));
        out.push(format!("{share} {:>9}  {}{}", last.samples, "  ".repeat(depth - 1), chain.join(arrow)));
        let hidden: u64 = last.children.iter().filter(|c| c.share < min_share).map(|c| c.samples).sum();
        if hidden > 0 {
            out.push(color::dim(&format!("{:>7} {hidden:>9}  {}(smaller branches)", "", "  ".repeat(depth))));
        }
        todo.extend(last.children.iter().rev().map(|c| (c, depth + 1)));
    }
    out
}

fn label(node: &TreeNode) -> String {
    let mut text = terminal::escape(&node.name);
    if node.inlined {
        text += " (inlined)";
    }
    if !node.object.is_empty() {
        text += &color::dim(&format!(" [{}]", terminal::escape(&node.object)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::aggregate::locate_with_graph;
    use crate::profile::format::{FrameRef, ObjectRef, Profile, Space, StackCount};
    use crate::profile::symbolize::Symbolizer;

    /// Unreadable object: frames are named `x+0xOFFSET`. Stacks (root last):
    /// leaf ← a ← main (3), leaf ← b ← main (1), a ← a ← main (2, recursion).
    fn graph() -> CallGraph {
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

    fn names(node: &TreeNode) -> Vec<(String, u64)> {
        node.children.iter().map(|c| (c.name.clone(), c.samples)).collect()
    }

    #[test]
    fn callers_split_by_caller_and_count_recursion_once() {
        let g = graph();
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
        let g = graph();
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
        let printed = lines(&main, " → ", 0.0).join("\n");
        assert!(printed.contains("x+0x30 [x] → x+0x10 [x]"), "single-child chains on one line:\n{printed}");
    }
}
