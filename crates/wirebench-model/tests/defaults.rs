//! Tests of `wirebench_model::spec`.

use wirebench_model::spec::*;

/// (send, receive) call sizes of a stream of `shape` without sizes given.
fn sizes(shape: StreamShape) -> (u32, u32) {
    let s = StreamSpec::new(shape, CallSizes::default());
    (s.send_size_bytes, s.recv_size_bytes)
}

fn flows(flows: u32) -> StreamShape {
    StreamShape {
        flows,
        ..StreamShape::default()
    }
}

fn bidir(shape: StreamShape) -> StreamShape {
    StreamShape {
        direction: Direction::Bidir,
        ..shape
    }
}

fn sendfile(shape: StreamShape) -> StreamShape {
    StreamShape {
        send_path: SendPath::Sendfile,
        ..shape
    }
}

#[test]
fn one_flow_sends_and_receives_one_mebibyte_calls() {
    assert_eq!(sizes(flows(1)), (1 << 20, 1 << 20));
    // 32 connections still run a thread each: 32 MiB of buffers.
    assert_eq!(sizes(bidir(flows(16))), (1 << 20, 1 << 20));
}

#[test]
fn many_flows_halve_the_message_to_the_calls_budget() {
    // Epoll engine: 4 GiB / connections, as a power of two below 1 MiB.
    assert_eq!(sizes(flows(4096)), (1 << 20, 1 << 20));
    assert_eq!(sizes(flows(4097)), (512 << 10, 512 << 10));
    assert_eq!(sizes(flows(10_000)), (256 << 10, 256 << 10));
    assert_eq!(sizes(bidir(flows(10_000))), (128 << 10, 128 << 10));
    // Paced flows keep a thread (and a buffer) each: 512 MiB / 10,000 buffers.
    let paced = StreamShape {
        rate_bps: Some(1_000_000),
        ..flows(10_000)
    };
    assert_eq!(sizes(paced), (32 << 10, 32 << 10));
    // Worker threads asked for: the epoll engine with few flows too (buffers 2 + 1).
    let workers = StreamShape {
        threads: Some(2),
        ..flows(8)
    };
    assert_eq!(workers.epoll_workers_bound(), Some(2));
    assert_eq!(sizes(workers), (1 << 20, 1 << 20));
}

#[test]
fn a_sender_that_does_not_copy_is_received_in_smaller_calls() {
    assert_eq!(sizes(sendfile(flows(1))), (1 << 20, 256 << 10));
    for path in [SendPath::Splice, SendPath::Zerocopy, SendPath::UringZc] {
        let shape = StreamShape {
            send_path: path,
            ..flows(1)
        };
        assert_eq!(sizes(shape), (1 << 20, 256 << 10), "{path:?}");
    }
    let uring = StreamShape {
        send_path: SendPath::Uring,
        ..flows(1)
    };
    assert_eq!(sizes(uring), (1 << 20, 1 << 20));
    // A thread (and buffer) per flow: 512 MiB over 1,000 and 20,000 buffers.
    assert_eq!(sizes(sendfile(flows(512))), (1 << 20, 256 << 10));
    assert_eq!(sizes(sendfile(flows(1000))), (512 << 10, 256 << 10));
    assert_eq!(sizes(sendfile(flows(10_000))), (32 << 10, 32 << 10));
    assert_eq!(sizes(bidir(sendfile(flows(10_000)))), (16 << 10, 16 << 10));
}

#[test]
fn sizes_given_are_kept() {
    let given = |send, recv| {
        let s = StreamSpec::new(
            sendfile(flows(10_000)),
            CallSizes {
                send_bytes: send,
                recv_bytes: recv,
            },
        );
        (s.send_size_bytes, s.recv_size_bytes)
    };
    assert_eq!(given(Some(1 << 20), Some(1 << 20)), (1 << 20, 1 << 20));
    assert_eq!(given(None, Some(2 << 20)), (32 << 10, 2 << 20));
    assert_eq!(given(Some(100), None), (100, 32 << 10));
}

#[test]
fn the_shape_of_a_spec_gives_back_its_settings() {
    let shape = StreamShape {
        flows: 7,
        direction: Direction::Reverse,
        rate_bps: Some(5_000),
        send_path: SendPath::Splice,
        recv_path: RecvPath::Discard,
        threads: Some(3),
    };
    assert_eq!(StreamSpec::new(shape, CallSizes::default()).shape(7), shape);
}
