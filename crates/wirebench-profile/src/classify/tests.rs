//! The classification's unit tests: self symbols alone, call-chain context, user samples.

use super::*;

fn k(names: &[&'static str]) -> Vec<FrameSym<'static>> {
    names.iter().map(|n| FrameSym::Kernel(Some(*n))).collect()
}

/// The self symbol alone, for symbols a reader of the issue would name.
#[test]
fn self_symbols() {
    let cases: &[(&str, ProfileCategory)] = &[
        ("copy_user_enhanced_fast_string", C::Copy),
        ("rep_movs_alternative", C::Copy),
        ("_copy_to_iter", C::Copy),
        ("skb_copy_datagram_iter", C::Copy),
        ("csum_partial", C::Checksum),
        ("csum_partial_copy_generic", C::Checksum),
        ("do_csum", C::Checksum),
        ("__skb_checksum_complete", C::Checksum),
        ("kmem_cache_alloc_node_noprof", C::MemoryManagement),
        ("__alloc_skb", C::MemoryManagement),
        ("skb_release_data", C::MemoryManagement),
        ("kfree_skbmem", C::MemoryManagement),
        ("get_page_from_freelist", C::MemoryManagement),
        ("__do_softirq", C::Interrupts),
        ("handle_softirqs", C::Interrupts),
        ("net_rx_action", C::Interrupts),
        ("asm_sysvec_apic_timer_interrupt", C::Interrupts),
        ("veth_xmit", C::Driver),
        ("loopback_xmit", C::Driver),
        ("tcp_sendmsg_locked", C::Tcp),
        ("tcp_v4_rcv", C::Tcp),
        ("tcp_ack", C::Tcp),
        ("__tcp_transmit_skb", C::Tcp),
        ("__inet_lookup_established", C::Tcp),
        ("ip_finish_output2", C::IpAndBelow),
        ("__netif_receive_skb_core.constprop.0", C::IpAndBelow),
        ("__dev_queue_xmit", C::IpAndBelow),
        ("nf_hook_slow", C::IpAndBelow),
        ("process_backlog", C::IpAndBelow),
        ("sock_recvmsg", C::SocketSyscall),
        ("__sys_sendto", C::SocketSyscall),
        ("entry_SYSCALL_64", C::SocketSyscall),
        ("do_syscall_64", C::SocketSyscall),
        ("syscall_exit_to_user_mode", C::SocketSyscall),
        ("inet_recvmsg", C::SocketSyscall),
        ("__schedule", C::Scheduler),
        ("schedule", C::Scheduler),
        ("try_to_wake_up", C::Scheduler),
        ("pick_next_task_fair", C::Scheduler),
        ("native_queued_spin_lock_slowpath", C::Locks),
        ("_raw_spin_lock_bh", C::Locks),
        ("mutex_lock", C::Locks),
        ("lock_sock_nested", C::Locks),
        ("pv_native_safe_halt", C::Idle),
        ("default_idle", C::Idle),
        ("do_idle", C::Idle),
        ("cpuidle_enter_state", C::Idle),
        ("some_unknown_function", C::Other),
    ];
    for &(name, want) in cases {
        assert_eq!(classify(k(&[name])), want, "{name}");
    }
}

/// The call chain decides what the self symbol leaves open.
#[test]
fn call_chain_context() {
    // memcpy under the TCP send path is copy, even through helpers with no rule.
    assert_eq!(
        classify(k(&[
            "memcpy",
            "some_helper",
            "tcp_sendmsg_locked",
            "tcp_sendmsg"
        ])),
        C::Copy
    );
    // The user-copy primitives: payload under the iov_iter copies, arguments under the
    // system-call layer.
    assert_eq!(
        classify(k(&[
            "rep_movs_alternative",
            "_copy_to_iter",
            "__skb_datagram_iter"
        ])),
        C::Copy
    );
    assert_eq!(
        classify(k(&["_copy_to_user", "move_addr_to_user", "__sys_recvfrom"])),
        C::SocketSyscall
    );
    assert_eq!(
        classify(k(&[
            "rep_movs_alternative",
            "_copy_from_user",
            "__sys_setsockopt"
        ])),
        C::SocketSyscall
    );
    // memcpy under skb cloning inherits the nearest definite caller.
    assert_eq!(
        classify(k(&["memcpy", "__skb_clone", "tcp_write_xmit"])),
        C::MemoryManagement
    );
    // memset under __alloc_skb is allocation; under nothing known, its fallback.
    assert_eq!(
        classify(k(&["memset_orig", "__alloc_skb"])),
        C::MemoryManagement
    );
    assert_eq!(classify(k(&["memset_orig"])), C::MemoryManagement);
    // An interrupt-enable point belongs to the section it ends.
    assert_eq!(
        classify(k(&[
            "_raw_spin_unlock_irqrestore",
            "try_to_wake_up",
            "__wake_up_common"
        ])),
        C::Scheduler
    );
    assert_eq!(
        classify(k(&["_raw_spin_unlock_irqrestore", "__hrtimer_run_queues"])),
        C::Interrupts
    );
    assert_eq!(classify(k(&["_raw_spin_unlock_irqrestore"])), C::Locks);
    // Thunks: the caller's category.
    assert_eq!(classify(k(&["__x86_return_thunk", "tcp_ack"])), C::Tcp);
    // The walk stops at user space: memcpy straight under a syscall boundary falls back.
    let mut frames = k(&["memcpy"]);
    frames.push(FrameSym::User { wirebench: true });
    frames.extend(k(&["tcp_sendmsg"]));
    assert_eq!(classify(frames), C::Copy);
    let mut frames = k(&["__x86_indirect_thunk_rax"]);
    frames.push(FrameSym::User { wirebench: true });
    frames.extend(k(&["tcp_sendmsg"]));
    assert_eq!(classify(frames), C::Other);
    // Unresolved callers are skipped.
    let frames = vec![
        FrameSym::Kernel(Some("memmove")),
        FrameSym::Kernel(None),
        FrameSym::Kernel(Some("skb_copy_datagram_iter")),
    ];
    assert_eq!(classify(frames), C::Copy);
    // Only CONTEXT_DEPTH callers are looked at.
    let mut deep = vec!["__x86_return_thunk"; CONTEXT_DEPTH + 1];
    deep.push("tcp_ack");
    assert_eq!(classify(k(&deep)), C::Other);
}

#[test]
fn user_samples() {
    assert_eq!(classify([FrameSym::User { wirebench: true }]), C::Wirebench);
    assert_eq!(classify([FrameSym::User { wirebench: false }]), C::Other);
    assert_eq!(classify([FrameSym::Kernel(None)]), C::Other);
    assert_eq!(classify(std::iter::empty()), C::Other);
}

/// Every ambiguous row can be decided; no rule is shadowed entirely by an earlier one
/// with the same pattern.
#[test]
fn table_has_no_duplicate_patterns() {
    let mut seen = std::collections::HashSet::new();
    for r in KERNEL_RULES {
        assert!(seen.insert(r.pattern), "duplicate {:?}", r.pattern);
    }
}
