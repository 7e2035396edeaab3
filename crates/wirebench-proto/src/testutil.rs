//! Sample values shared by the unit tests.

use wirebench_stats::cpu::{CpuBreakdown, SystemCpuUtil};

use crate::measure::*;
use crate::message::*;
use crate::spec::{Direction, FlowDir, Limits, RecvPath, SendPath, TestSpec};

/// A `SideReport` with every optional field filled.
pub fn full_side_report(host: HostRole) -> SideReport {
    let b = CpuBreakdown {
        user_pct: 12.5,
        system_pct: 30.25,
        irq_pct: 0.5,
        softirq_pct: 7.0,
        steal_pct: 0.0,
        idle_pct: 49.75,
        busy_pct: 50.25,
    };
    SideReport {
        host,
        status: SideStatus::Aborted("peer went away".into()),
        flows: vec![FlowSide {
            flow: 0,
            dir: FlowDir::ClientToServer,
            role: Role::Receiver,
            total_bytes: 12_345_678_901,
            window_bytes: 10_000_000_000,
            window_start_ns: 1_000_000_000,
            window_end_ns: 11_000_000_123,
            sndbuf_bytes: Some(425_984),
            rcvbuf_bytes: Some(131_072),
            congestion: Some("cubic".into()),
            pmtu_bytes: Some(1500),
            tcp_info: Some(TcpInfoReport {
                retransmits_total: 3,
                rtt_us: 120,
                rttvar_us: 30,
                min_rtt_us: Some(80),
                snd_cwnd_segments: 10,
                snd_mss_bytes: 1448,
                rcv_mss_bytes: 1448,
                pmtu_bytes: 1500,
                delivery_rate_bps: Some(9_400_000_000),
                bytes_acked: Some(u64::MAX),
                bytes_received: Some(0),
                rwnd_limited_us: Some(5),
                sndbuf_limited_us: None,
            }),
            error: Some("connection reset".into()),
            path: Some("zerocopy".into()),
            path_fallback: Some("io_uring disabled".into()),
            zerocopy: Some(ZeroCopyStats {
                sends: 10,
                sends_completed_zerocopy: 4,
                sends_completed_copied: 6,
                bytes_mapped: 1 << 20,
                bytes_copied: 4096,
            }),
            verified_bytes: Some(12_345_678_901),
            verify_errors: Some(0),
        }],
        intervals: vec![IntervalSample {
            index: 0,
            start_ns: 0,
            end_ns: 1_000_000_000,
            in_warmup: true,
            flows: vec![FlowInterval {
                flow: 0,
                role: Role::Receiver,
                bytes: 1_176_000_000,
            }],
        }],
        cpu: Some(CpuReport {
            window_start_ns: 1_000_000_000,
            window_end_ns: 11_000_000_000,
            system: SystemCpuUtil {
                cpus: 2,
                total: b,
                per_cpu: vec![(0, b), (1, b)],
                busiest_cpu: 1,
                busiest: b,
                window_ticks: 1000,
            },
            threads_user_ns: 1_500_000_000,
            threads_system_ns: 4_000_000_000,
        }),
        env: Environment {
            software: "wirebench 0.1.0".into(),
            kernel_release: Some("6.8.0".into()),
            cpu_model: Some("Example CPU \"quoted\" \u{e9}".into()),
            cpus_online: Some(2),
            default_congestion: Some("cubic".into()),
            available_congestion: vec!["reno".into(), "cubic".into()],
            tcp_rmem_bytes: Some([4096, 131_072, 6_291_456]),
            tcp_wmem_bytes: Some([4096, 16_384, 4_194_304]),
            rmem_max_bytes: Some(212_992),
            wmem_max_bytes: Some(212_992),
            interface: Some(InterfaceEnv {
                name: "eth0".into(),
                mtu_bytes: Some(1500),
                rx_checksum: Some(true),
                tx_checksum: Some(true),
                scatter_gather: Some(false),
                tso: Some(true),
                gso: None,
                gro: Some(true),
            }),
        },
        warnings: vec!["cpu window shorter than the test".into()],
        rr: Some(rr_report()),
        udp: Some(udp_report()),
        engine: Some("thread per flow".into()),
    }
}

/// A client request/response report with every optional field filled.
pub fn rr_report() -> crate::rr::RrReport {
    use crate::rr::*;
    let counts = RrCounts {
        transactions: 1000,
        errors: 1,
        connect_errors: 2,
        lost: 3,
        late: 1,
        garbage: 4,
        closes_orderly: 5,
        closes_reset: 6,
    };
    let latency = wirebench_stats::latency::LatencySummary {
        count: 1000,
        clamped: 0,
        min_ns: 10_000,
        mean_ns: 20_000.5,
        stddev_ns: 1_000.25,
        p50_ns: 19_000,
        p90_ns: 25_000,
        p99_ns: 40_000,
        p999_ns: 90_000,
        p9999_ns: 100_000,
        max_ns: 120_000,
    };
    RrReport {
        workload: RrWorkload::TcpCrr,
        role: RrRole::Client,
        close_mode: Some(CloseMode::Abortive),
        request_size_bytes: 1,
        response_size_bytes: 1,
        burst: 1,
        window_start_ns: 1_000_000_000,
        window_end_ns: 2_000_000_000,
        flows: vec![RrFlowSide {
            flow: 0,
            window: counts,
            total: counts,
            latency: Some(latency),
            open_loop: Some(OpenLoopReport {
                requested_per_s: 1000.0,
                achieved_per_s: 999.5,
                slots_in_window: 1000,
                sent_total: 1001,
                missed_slots: 1,
                max_outstanding: 100,
                peak_outstanding: 3,
            }),
            tcp_info: None,
            error: Some("reset".into()),
        }],
        latency: Some(latency),
        intervals: vec![RrInterval {
            index: 0,
            start_ns: 0,
            end_ns: 1_000_000_000,
            in_warmup: true,
            flows: vec![RrFlowInterval {
                flow: 0,
                transactions: 10,
                lost: 1,
            }],
        }],
    }
}

/// A UDP stream report with one sender, one receiver and one socket.
pub fn udp_report() -> UdpReport {
    use crate::udp::*;
    UdpReport {
        senders: vec![UdpSendReport {
            flow: 0,
            datagram_bytes: 1400,
            target_rate_bps: Some(1_000_000),
            datagrams_sent: 100,
            bytes_sent: 140_000,
            window_datagrams_sent: 90,
            window_bytes_sent: 126_000,
            window_start_ns: 1,
            window_end_ns: 2,
            send_errors: 1,
            pacing_resets: 0,
            error: None,
        }],
        receivers: vec![UdpRecvReport {
            flow: 1,
            datagrams_received: 98,
            bytes_received: 137_200,
            window_datagrams_received: 88,
            window_bytes_received: 123_200,
            sender_window: SenderWindow {
                start_ns: 1,
                end_ns: 2,
            },
            window_first_arrival_ns: Some(5),
            window_last_arrival_ns: None,
            in_order: 97,
            late: 1,
            duplicate: 2,
            too_old: 0,
            highest_seq: Some(99),
            jitter_ns: 1234.5,
            reorder_window_seqs: 1024,
            error: Some("x".into()),
        }],
        sockets: vec![UdpRecvSocketReport {
            flows: vec![1],
            invalid: UdpInvalidCounts {
                too_short: 1,
                bad_magic: 2,
                foreign_flow: 3,
                foreign_source: 4,
            },
            error: None,
        }],
        intervals: vec![UdpIntervalSample {
            index: 0,
            start_ns: 0,
            end_ns: 1,
            in_warmup: false,
            flows: vec![UdpFlowInterval {
                flow: 0,
                role: Role::Sender,
                datagrams: 1,
                bytes: 1400,
                send_errors: 0,
                late: 0,
                duplicate: 0,
            }],
        }],
    }
}

/// A spec with every optional field set.
pub fn full_spec() -> TestSpec {
    TestSpec {
        direction: Direction::Bidir,
        flows: 4,
        warmup_ms: 1000,
        interval_ms: Some(500),
        window_bytes: Some(1 << 20),
        congestion: Some("bbr".into()),
        nodelay: true,
        rate_bps: Some(2_500_000_000),
        server_cpu: Some(3),
        client_cpu: Some(2),
        send_path: Some(SendPath::Zerocopy),
        recv_path: Some(RecvPath::Zerocopy),
        verify: true,
        ..TestSpec::stream_default()
    }
}

/// One of every message variant.
pub fn all_messages() -> Vec<Message> {
    let report = full_side_report(HostRole::Server);
    vec![
        Message::Hello(Hello {
            magic: HELLO_MAGIC.into(),
            version: PROTOCOL_VERSION,
            software: "wirebench 0.1.0".into(),
        }),
        Message::Welcome(Welcome {
            version: PROTOCOL_VERSION,
            software: "wirebenchd 0.1.0".into(),
            limits: Limits::default(),
            nonce: "ab".repeat(32),
            server_identity: "srv".into(),
            auth_required: false,
        }),
        Message::Test(Box::new(TestRequest::unauthenticated(full_spec()))),
        Message::Test(Box::new(TestRequest::unauthenticated(
            TestSpec::stream_default(),
        ))),
        Message::Accepted(Accepted {
            test_id: u64::MAX,
            token: "00112233445566778899aabbccddeeff".into(),
        }),
        Message::Busy(Busy {
            running: 4,
            cap: 4,
            retry_after_ms: 1500,
        }),
        Message::Error(ErrorMsg {
            code: ErrorCode::InvalidSpec,
            field: Some("flows".into()),
            message: "flows = 0 is out of range".into(),
        }),
        Message::Error(ErrorMsg {
            code: ErrorCode::Internal,
            field: None,
            message: String::new(),
        }),
        Message::Ready(Empty {}),
        Message::Start(Empty {}),
        Message::Interval(IntervalMsg {
            host: HostRole::Client,
            sample: report.intervals[0].clone(),
            rr: None,
            udp: None,
        }),
        Message::Interval(IntervalMsg {
            host: HostRole::Server,
            sample: report.intervals[0].clone(),
            rr: Some(rr_report().intervals[0].clone()),
            udp: Some(udp_report().intervals[0].clone()),
        }),
        Message::Results(Box::new(report)),
        Message::Results(Box::new(SideReport {
            status: SideStatus::Completed,
            cpu: None,
            ..full_side_report(HostRole::Client)
        })),
        Message::Heartbeat(Empty {}),
        Message::Abort(AbortMsg {
            reason: "interrupted".into(),
        }),
        Message::Bye(Empty {}),
    ]
}
