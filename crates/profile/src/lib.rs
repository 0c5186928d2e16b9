//! Profiling: `perflab profile` samples a command, `show` prints a saved profile,
//! `annotate` disassembles hot functions with per-instruction samples and cost hints,
//! `diff` compares two profiles. The pipeline is
//! [`record`] (sample) → [`format`](mod@format) (the saved file) → [`symbolize`] → [`aggregate`] →
//! [`report`] (the flat report as data), [`annotate`] (with `hints` and, where
//! installed, llvm-mca via `mca`) and [`diff`]; `render::profile` prints them;
//! `-g dwarf` stacks are unwound by [`unwind`] while recording, runtime code (JIT, SBCL)
//! is named from perf maps by [`jitmap`] and copied while recording, stripped objects'
//! debug files may come from `debuginfod`; call stacks are drawn by perflab-render and
//! walked by [`callers`]. [`alloc`] records allocation profiles (the malloc family
//! probed by uprobes), kept in the file as [`allocations`]. [`select`] keeps some samples (perf report's filters),
//! [`sort`] groups them by perf report's sort keys; [`sites`] places frames at addresses and lines for the viewers' formats.

#![deny(missing_docs)]

pub mod aggregate;
pub mod alloc;
pub mod allocations;
pub mod annotate;
pub mod callers;
pub mod debuginfod;
pub mod diff;
pub mod error;

pub mod format;
pub(crate) mod hints;
pub mod input;
pub mod jitmap;
pub mod kernel;
pub(crate) mod mca;
pub(crate) mod names;
pub(crate) mod notes;
pub mod offcpu;
pub mod record;
pub mod report;
pub mod select;
pub mod sites;
pub mod sort;
mod symbol_damage;
pub mod symbolize;
pub mod target;
pub mod top;
pub mod unwind;
