//! Output: the terminal table, JSON, Markdown and CSV renderings of an experiment.

pub mod color;
