//! [`Cold`]: an `Option` whose value is dropped out of line.

/// An `Option` whose value is dropped out of line, so the drop of what holds it stays
/// small.
pub(crate) struct Cold<T>(pub(crate) Option<T>);

impl<T> Drop for Cold<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_cold(value);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_cold<T>(value: T) {
    drop(value);
}
