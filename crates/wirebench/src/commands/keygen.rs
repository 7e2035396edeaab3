//! `wirebench keygen`: a new `IDENTITY KEY` line for a `serve --auth-keys` file.

use anyhow::{anyhow, Result};
use clap::Args;
use wirebench_proto::auth::{valid_identity, Key};

/// `wirebench keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The identity the key belongs to (1-64 characters of A-Z a-z 0-9 . _ @ -).
    pub identity: String,
}

/// Print a new key line for `a.identity` on stdout.
pub fn keygen(a: &KeygenArgs) -> Result<()> {
    if !valid_identity(&a.identity) {
        return Err(anyhow!(
            "identity '{}' must be 1-64 characters of A-Z a-z 0-9 . _ @ -",
            a.identity
        ));
    }
    let mut raw = vec![0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw);
    let key = Key::from_bytes(raw).map_err(|e| anyhow!(e))?;
    println!("{} {}", a.identity, key.to_hex());
    Ok(())
}
