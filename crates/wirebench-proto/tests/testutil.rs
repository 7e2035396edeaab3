//! Sample values shared by the tests.

use wirebench_model::abort::{AbortReason, EngineKind, Placement};
use wirebench_model::profile::{
    CategoryProfile, CpuProfile, KernelSymbols, ProfileCategory, ProfileEvent, ProfileReport,
    ProfileUnavailable, SymbolSamples,
};
use wirebench_model::rr::*;
use wirebench_model::side::*;
use wirebench_model::spec::*;
use wirebench_model::udp::*;
use wirebench_model::warning::{
    Cause, DataThread, FallbackReason, FlowError, OsError, Step, Warning,
};
use wirebench_stats::cpu::{CpuBreakdown, SystemCpuUtil};

use wirebench_proto::message::*;

fn span(start_ns: u64, end_ns: u64) -> Span {
    Span { start_ns, end_ns }
}

fn os(message: &str) -> OsError {
    OsError {
        errno: Some(104),
        message: message.into(),
    }
}

/// A stream `SideReport` with every optional field filled.
pub fn full_side_report(host: HostRole) -> SideReport {
    let b = CpuBreakdown {
        user_pct: 12.5,
        system_pct: 30.25,
        irq_pct: 0.5,
        softirq_pct: 7.0,
        steal_pct: 0.0,
        idle_pct: 49.75,
        busy_pct: 50.25,
        unattributed_pct: 0.0,
    };
    SideReport {
        host,
        status: SideStatus::Aborted(AbortReason::PeerSilent { silence_ms: 5000 }),
        window: Some(Span {
            start_ns: 1_000,
            end_ns: 2_000_000_000,
        }),
        data: Some(SideData::Stream(StreamSide {
            flows: vec![FlowSide {
                flow: 0,
                dir: FlowDir::ClientToServer,
                role: Role::Receiver,
                total_bytes: 12_345_678_901,
                window_bytes: 10_000_000_000,
                window: span(1_000_000_000, 11_000_000_123),
                socket: SocketFacts {
                    local: Some("10.0.0.2:5301".into()),
                    peer: Some("10.0.0.1:40000".into()),
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
                        pacing_rate_bps: Some(18_800_000_000),
                        bytes_acked: Some(u64::MAX),
                        bytes_received: Some(0),
                        busy_us: Some(9_000_000),
                        rwnd_limited_us: Some(5),
                        sndbuf_limited_us: None,
                        dsack_dups: Some(3),
                    }),
                    notsent_lowat_bytes: None,
                },
                error: Some(FlowError {
                    step: Step::Receive,
                    cause: Cause::Os {
                        error: os("connection reset"),
                    },
                }),
                path: PathUsed::Recv(RecvPath::Zerocopy),
                path_fallback: Some(FallbackReason::SetupFailed {
                    error: os("io_uring disabled"),
                }),
                zerocopy: Some(ZeroCopyStats {
                    sends: 10,
                    sends_completed_zerocopy: 4,
                    sends_completed_copied: 6,
                    bytes_mapped: 1 << 20,
                    bytes_copied: 4096,
                }),
                verify: Some(VerifyCounts {
                    verified_bytes: 12_345_678_901,
                    mismatched_bytes: 0,
                }),
                recv_wait: Some(RecvWaitStats {
                    asked: RecvWait::Nap,
                    recv_calls: 1_000,
                    empty_polls: 700,
                    naps: 600,
                    nap_ns: 42_000_000,
                    blocking_waits: 12,
                    small_buffer_calls: 3,
                    large_calls: 5,
                    epoll_workers: 0,
                }),
            }],
            worker_waits: vec![RecvWaitStats {
                asked: RecvWait::Auto,
                recv_calls: 9_000,
                empty_polls: 800,
                naps: 640,
                nap_ns: 70_000_000,
                blocking_waits: 40,
                small_buffer_calls: 2,
                large_calls: 0,
                epoll_workers: 1,
            }],
            intervals: vec![ByteInterval {
                index: 0,
                span: span(0, 1_000_000_000),
                in_warmup: true,
                flows: vec![FlowBytes {
                    flow: 0,
                    role: Role::Receiver,
                    bytes: 1_176_000_000,
                }],
                tcp: vec![FlowTcpSample {
                    flow: 1,
                    cwnd_segments: 10,
                    mss_bytes: 1448,
                    srtt_us: 120,
                    rttvar_us: 30,
                    retransmits_total: u32::MAX,
                    delivery_rate_bps: Some(9_400_000_000),
                    pacing_rate_bps: None,
                    at_close: true,
                }],
            }],
        })),
        cpu: Some(CpuReport {
            window: span(1_000_000_000, 11_000_000_000),
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
            threads_run_delay_ns: Some(250_000_000),
            cpus_used: vec![0, 1],
            other_processes_ns: Some(3_000_000_000),
            other_processes: vec![wirebench_model::side::ProcessCpu {
                pid: 4242,
                comm: "cc1plus (\u{1b}[31m)".into(),
                cpu_ns: 2_000_000_000,
            }],
        }),
        env: Environment {
            software: "wirebench 0.1.0".into(),
            hostname: Some("host-\u{e9}".into()),
            boot_id: Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
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
        warnings: vec![
            Warning::DrainTruncated {
                thread: DataThread::Flow(0),
                drain_limit_ms: 3000,
            },
            Warning::PinFailed {
                thread: DataThread::Worker(1),
                error: os("invalid argument"),
            },
            Warning::ProfileUnavailable {
                reason: ProfileUnavailable::NotPermitted {
                    paranoid: Some(2),
                    cap_perfmon: false,
                    cap_sys_admin: false,
                },
            },
            Warning::ProfileSamplesLost {
                lost_samples: 3,
                samples: 7997,
            },
        ],
        engine: Some(EngineKind::Epoll {
            workers: 2,
            placement: Placement::RoundRobin { cpus: vec![0, 1] },
        }),
        profile: Some(full_profile()),
        buffer_offset_bytes: Some(16),
    }
}

/// A profile with every field filled.
pub fn full_profile() -> ProfileReport {
    ProfileReport {
        event: ProfileEvent::CpuClock,
        freq_hz: 4000,
        period: 250_000,
        cpus: vec![0, 1],
        window_ns: 1_000_000_000,
        samples: 7997,
        lost_samples: 3,
        throttled: 0,
        unsampled_idle_ns: 500_000,
        unsampled_busy_ns: 250_000,
        oversampled_busy_ns: 125_000,
        idle_from_proc_stat: true,
        kernel_symbols: KernelSymbols::Resolved,
        categories: ProfileCategory::ALL
            .iter()
            .map(|&c| CategoryProfile {
                category: c,
                samples: 615,
                wirebench_samples: 300,
                cpu_ns: 153_750_000,
                pct: 7.69,
                top_symbols: vec![SymbolSamples {
                    symbol: "tcp_sendmsg_locked".into(),
                    samples: 600,
                }],
            })
            .collect(),
        per_cpu: vec![CpuProfile {
            cpu: 0,
            samples: 4000,
            unsampled_idle_ns: 0,
            unsampled_busy_ns: 0,
            oversampled_busy_ns: 125_000,
            cpu_ns: vec![71_428_571; 14],
        }],
    }
}

/// A client request/response side with every optional field filled.
pub fn rr_side() -> RrSide {
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
    RrSide {
        role: RrRole::Client,
        close_mode: Some(CloseMode::Abortive),
        window: span(1_000_000_000, 2_000_000_000),
        flows: vec![RrFlowSide {
            flow: 0,
            window: counts,
            total: counts,
            latency: Some(latency),
            open_loop: Some(OpenLoopCounts {
                slots_in_window: 1000,
                sent_total: 1001,
                missed_slots: 1,
                peak_outstanding: 3,
            }),
            tcp_info: None,
            congestion: Some("reno".into()),
            error: Some(FlowError {
                step: Step::ResponseRead,
                cause: Cause::PeerClosed { mid_message: true },
            }),
            local: Some("10.0.0.1:40000".into()),
            peer: Some("10.0.0.2:5201".into()),
            busy_poll: Some(wirebench_model::rr::BusyPollFlow {
                so_busy_poll_us: None,
                so_busy_poll_error: Some(wirebench_model::warning::OsError {
                    errno: Some(1),
                    message: "Operation not permitted".into(),
                }),
            }),
        }],
        latency: Some(latency),
        latency_histogram: Some(wirebench_stats::buckets::LatencyBuckets {
            buckets_per_octave: 8,
            buckets: vec![wirebench_stats::buckets::LatencyBucket {
                lo_ns: 9_742,
                hi_ns: 10_624,
                count: 1000,
            }],
        }),
        intervals: vec![RrInterval {
            index: 0,
            span: span(0, 1_000_000_000),
            in_warmup: true,
            flows: vec![RrFlowInterval {
                flow: 0,
                transactions: 10,
                lost: 1,
                rtt_p50_ns: Some(19_000),
                rtt_p99_ns: Some(41_000),
            }],
            rtt_p50_ns: Some(19_000),
            rtt_p99_ns: Some(41_000),
        }],
    }
}

/// A UDP stream side with one sender, one receiver and one socket.
pub fn udp_side() -> UdpSide {
    UdpSide {
        senders: vec![UdpSendReport {
            flow: 0,
            datagram_bytes: 1400,
            target_rate_bps: Some(1_000_000),
            datagrams_sent: 100,
            bytes_sent: 140_000,
            window_datagrams_sent: 90,
            window_bytes_sent: 126_000,
            window: span(1, 2),
            send_refused: 2,
            send_errors: 1,
            pacing_resets: 0,
            error: None,
            local: Some("[fd00::1]:40001".into()),
            peer: Some("[fd00::2]:40002".into()),
        }],
        receivers: vec![UdpRecvReport {
            flow: 1,
            datagrams_received: 98,
            bytes_received: 137_200,
            window_datagrams_received: 88,
            window_bytes_received: 123_200,
            sender_window: span(1, 2),
            window_first_arrival_ns: Some(5),
            window_last_arrival_ns: None,
            in_order: 97,
            late: 1,
            duplicate: 2,
            too_old: 0,
            highest_seq: Some(99),
            jitter_ns: 1234.5,
            reorder_window_seqs: 1024,
            error: Some(FlowError {
                step: Step::Receive,
                cause: Cause::TimedOut { after_ms: 3000 },
            }),
            local: Some("10.0.0.2:40003".into()),
            peer: None,
        }],
        sockets: vec![UdpRecvSocketReport {
            flows: vec![1],
            invalid: UdpInvalidCounts {
                too_short: 1,
                bad_magic: 2,
                foreign_flow: 3,
                foreign_source: 4,
            },
            rcvbuf_drops: Some(7),
            error: None,
        }],
        intervals: vec![UdpInterval {
            index: 0,
            span: span(0, 1),
            in_warmup: false,
            flows: vec![
                UdpFlowInterval {
                    flow: 0,
                    role: Role::Sender,
                    datagrams: 1,
                    bytes: 1400,
                    send_errors: 0,
                    late: 0,
                    duplicate: 0,
                    expected: 0,
                    lost: 0,
                    jitter_ns: None,
                },
                UdpFlowInterval {
                    flow: 1,
                    role: Role::Receiver,
                    datagrams: 97,
                    bytes: 135_800,
                    send_errors: 0,
                    late: 1,
                    duplicate: 2,
                    expected: 100,
                    lost: 3,
                    jitter_ns: Some(1_235),
                },
            ],
        }],
        host_drops: Some(UdpHostDrops {
            rcvbuf_errors: 7,
            in_errors: 9,
        }),
    }
}

/// A stream spec with every optional field set.
pub fn full_spec() -> TestSpec {
    TestSpec {
        common: CommonSpec {
            flows: 4,
            duration_ms: 10_000,
            warmup_ms: 1000,
            interval_ms: Some(500),
            window_bytes: Some(1 << 20),
            server_cpu: Some(3),
            client_cpu: Some(2),
            tos: Some(0x10),
            fq_rate_bps: Some(5_000_000_000),
            dont_fragment: true,
            profile_hz: Some(4000),
            buffer_offset_bytes: Some(64),
            admission_group: Some(7),
        },
        workload: WorkloadSpec::Stream(StreamSpec {
            direction: Direction::Bidir,
            send_size_bytes: 128 * 1024,
            recv_size_bytes: 64 * 1024,
            rate_bps: Some(2_500_000_000),
            send_path: SendPath::Zerocopy,
            recv_path: RecvPath::Zerocopy,
            verify: true,
            threads: Some(2),
            pin_threads: true,
            tcp: TcpOptions {
                congestion: Some("bbr".into()),
                nodelay: true,
                mss_bytes: Some(1400),
                notsent_lowat_bytes: Some(16384),
            },
            stop_after_bytes: None,
            recv_wait: RecvWait::Block,
        }),
    }
}

/// One of every message variant (and of every workload's report and interval).
pub fn all_messages() -> Vec<Message> {
    let report = full_side_report(HostRole::Server);
    let stream_interval = report.stream().map(|s| s.intervals[0].clone());
    let rr_spec = TestSpec::new(WorkloadSpec::Rr(RrSpec {
        pacing: RrLoop::Open {
            transactions_per_s: 1000,
            max_outstanding: 10,
        },
        ..RrSpec::default()
    }));
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
        Message::Test(Box::new(TestRequest::unauthenticated(rr_spec))),
        Message::Test(Box::new(TestRequest::unauthenticated(TestSpec::new(
            WorkloadSpec::UdpStream(UdpStreamSpec::default()),
        )))),
        Message::Accepted(Accepted {
            test_id: u64::MAX,
            token: "00112233445566778899aabbccddeeff".into(),
        }),
        Message::Busy(Busy {
            running: 4,
            cap: 4,
            retry_after_ms: 1500,
            scope: wirebench_proto::message::BusyScope::Server,
        }),
        Message::Error(ErrorMsg {
            code: ErrorCode::InvalidSpec,
            field: Some(wirebench_model::validate::SpecField::Flows),
            limit: Some(wirebench_model::validate::LimitName::MaxFlows),
            message: "flows = 0 is out of range".into(),
        }),
        Message::Error(ErrorMsg {
            code: ErrorCode::Internal,
            field: None,
            limit: None,
            message: String::new(),
        }),
        Message::Ready(Empty {}),
        Message::Start(Empty {}),
        Message::Interval(IntervalMsg {
            host: HostRole::Client,
            sample: IntervalData::Stream(stream_interval.unwrap_or_else(|| unreachable!())),
        }),
        Message::Interval(IntervalMsg {
            host: HostRole::Server,
            sample: IntervalData::Rr(rr_side().intervals[0].clone()),
        }),
        Message::Interval(IntervalMsg {
            host: HostRole::Server,
            sample: IntervalData::UdpStream(udp_side().intervals[0].clone()),
        }),
        Message::Results(Box::new(report)),
        Message::Results(Box::new(SideReport {
            status: SideStatus::Completed,
            cpu: None,
            data: Some(SideData::Rr(rr_side())),
            ..full_side_report(HostRole::Client)
        })),
        Message::Results(Box::new(SideReport {
            data: Some(SideData::UdpStream(udp_side())),
            ..full_side_report(HostRole::Client)
        })),
        Message::Results(Box::new(SideReport {
            data: None,
            engine: None,
            ..full_side_report(HostRole::Client)
        })),
        Message::Heartbeat(Empty {}),
        Message::Abort(AbortMsg {
            reason: AbortReason::Interrupted,
        }),
        Message::Abort(AbortMsg {
            reason: AbortReason::LimitExceeded {
                limit: wirebench_model::validate::LimitName::MaxRate,
                observed_bps: 2_000_000,
                max_bps: 1_000_000,
            },
        }),
        Message::Bye(Empty {}),
        Message::TicketRequest(Box::new(TestRequest::unauthenticated(
            TestSpec::stream_default(),
        ))),
        Message::Test(Box::new(TestRequest {
            ticket: Some("00112233445566778899aabbccddeeff".into()),
            ..TestRequest::unauthenticated(TestSpec::stream_default())
        })),
        Message::Ticket(TicketMsg {
            ticket: "00112233445566778899aabbccddeeff".into(),
            expires_in_ms: 30_000,
        }),
        Message::ThirdParty(Box::new(ThirdPartyRequest {
            spec: TestSpec::stream_default(),
            auth: Some(wirebench_proto::auth::AuthProof {
                identity: "alice".into(),
                mac: "ab".repeat(32),
            }),
            target: "[::1]:5301".into(),
            ticket: "00112233445566778899aabbccddeeff".into(),
        })),
        Message::Relaying(Relaying { test_id: 7 }),
        Message::Relayed(Box::new(Relayed {
            outcome: RelayOutcome::Completed,
            client: Some(full_side_report(HostRole::Client)),
            server: Some(full_side_report(HostRole::Server)),
        })),
        Message::Relayed(Box::new(Relayed {
            outcome: RelayOutcome::Aborted {
                reason: AbortReason::ServerShutdown,
            },
            client: None,
            server: None,
        })),
        Message::Relayed(Box::new(Relayed {
            outcome: RelayOutcome::Failed {
                error: wirebench_model::error::ErrorInfo::new(
                    wirebench_model::error::ErrorKind::AuthFailed,
                    "peer reported auth_failed: ticket refused",
                ),
            },
            client: None,
            server: None,
        })),
    ]
}
