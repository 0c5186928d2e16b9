//! Every format of a kind of result is an [`Exporter`], in the spirit of hyperfine's
//! `export` module: it renders the result to text; the `perflab` binary sends each to a
//! file or to stdout.

use super::OutputError;

/// One format of one kind of result (`R`: an experiment, a history, a doctor report…).
pub trait Exporter<R: ?Sized> {
    /// The whole document for `result`.
    fn render(&self, result: &R) -> Result<String, OutputError>;
}

/// A rendering made by a function (a terminal text put together by its command).
pub struct Text<F>(pub F);

impl<R: ?Sized, F: Fn(&R) -> String> Exporter<R> for Text<F> {
    fn render(&self, result: &R) -> Result<String, OutputError> {
        Ok((self.0)(result))
    }
}

/// An exporter of a part of a result (`stat`'s report holds the experiment that
/// hyperfine's formats are made of).
pub struct Part<E, F>(pub E, pub F);

impl<R: ?Sized, S: ?Sized, E: Exporter<S>, F: Fn(&R) -> &S> Exporter<R> for Part<E, F> {
    fn render(&self, result: &R) -> Result<String, OutputError> {
        self.0.render((self.1)(result))
    }
}
