//! wirebench-model's tests, one binary: validation rules, JSON shapes and round trips, the
//! stream defaults, the profile categories and the text escapes, through the public API.

mod defaults;
mod model;
mod profile;
mod text;
