//! Short names used in warnings and human output.

use wirebench_model::side::{HostRole, Role};
use wirebench_model::spec::FlowDir;

/// `"forward"` (client → server) or `"reverse"` (server → client), as on the command line.
pub fn dir(d: FlowDir) -> &'static str {
    match d {
        FlowDir::ClientToServer => "forward",
        FlowDir::ServerToClient => "reverse",
    }
}

/// `"client"` or `"server"`.
pub fn host(h: HostRole) -> &'static str {
    match h {
        HostRole::Client => "client",
        HostRole::Server => "server",
    }
}

/// `"sender"` or `"receiver"`.
pub fn role(r: Role) -> &'static str {
    match r {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
    }
}

pub use wirebench_analysis::{receiver_of, sender_of};
