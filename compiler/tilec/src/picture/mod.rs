//! Pictures of layouts.
