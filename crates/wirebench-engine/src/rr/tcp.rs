//! TCP RR flows: the closed-loop client (with burst), the open-loop client (a sender and a
//! receiver thread on a fixed schedule) and the server. The rules are in the [`super`]
//! module docs.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wirebench_model::warning::{Cause, DataThread, FlowError, OsError, Step, Warning};

use super::io::{orderly_finish, payload, read_full, write_full, FlowEnd, Stall, Tally};
use super::{FlowCtx, OpenLoop};
use crate::buffers;
use crate::pace::{wait_until, Schedule};
use crate::threads::account_thread;

/// A closed-loop client flow with `burst` transactions in flight.
pub(super) fn client_closed(ctx: &FlowCtx, s: &TcpStream, burst: u32) -> FlowEnd {
    let req = payload(ctx.cfg.request_size_bytes, ctx.cfg.timing.buffer_offset);
    let mut resp = buffers::zeroed(ctx.cfg.response_size_bytes, ctx.cfg.timing.buffer_offset);
    let burst = burst.max(1) as usize;
    let mut sent_at: VecDeque<Instant> = VecDeque::with_capacity(burst);
    let mut end = FlowEnd::new(Tally::new(true));
    let give_up = || ctx.aborted() || ctx.drain_expired();
    let waited = ctx.cfg.timing.drain_limit;
    'run: loop {
        while sent_at.len() < burst && !ctx.stopping() {
            // The round trip starts before the write: the write's own cost (on loopback it
            // may carry the whole path) is part of it.
            let t0 = Instant::now();
            if let Err(e) = write_full(s, &req, &give_up) {
                end.error = Some(e.at(Step::RequestWrite, waited));
                break 'run;
            }
            sent_at.push_back(t0);
        }
        let Some(&sent) = sent_at.front() else {
            break;
        };
        if let Err(e) = read_full(s, &mut resp, &give_up) {
            end.error = Some(e.at(Step::ResponseRead, waited));
            break;
        }
        let now = Instant::now();
        sent_at.pop_front();
        ctx.client_transaction(&mut end.tally, now.saturating_duration_since(sent));
    }
    finish_flow(ctx, s, &mut end);
    end
}

/// After a TCP RR flow: classify an abort, close in order if clean, read TCP_INFO.
pub(super) fn finish_flow(ctx: &FlowCtx, s: &TcpStream, end: &mut FlowEnd) {
    if ctx.aborted() {
        // The run is reported as aborted; a stall caused by the abort is not a flow error.
        end.error = None;
    } else if end.error.is_none() {
        if let Err(e) = orderly_finish(s, ctx, ctx.cfg.timing.drain_limit) {
            end.warnings.push(Warning::RepeatedErrors {
                flow: ctx.flow,
                step: e.step,
                count: 1,
                last: match e.cause {
                    Cause::Os { error } => error,
                    other => OsError {
                        errno: None,
                        message: format!("{other:?}"),
                    },
                },
            });
        }
    }
    end.socket_facts(s);
}

pub(super) fn server(ctx: &FlowCtx, s: &TcpStream) -> FlowEnd {
    let mut req = buffers::zeroed(ctx.cfg.request_size_bytes, ctx.cfg.timing.buffer_offset);
    let resp = payload(ctx.cfg.response_size_bytes, ctx.cfg.timing.buffer_offset);
    let mut end = FlowEnd::new(Tally::new(false));
    let give_up = || ctx.aborted() || ctx.drain_expired();
    let waited = ctx.cfg.timing.drain_limit;
    loop {
        match read_full(s, &mut req, &give_up) {
            Ok(()) => {}
            Err(Stall::Eof { partial: false }) => break,
            Err(e) => {
                end.error = Some(e.at(Step::RequestRead, waited));
                break;
            }
        }
        if let Err(e) = write_full(s, &resp, &give_up) {
            end.error = Some(e.at(Step::ResponseWrite, waited));
            break;
        }
        end.tally.transaction(ctx.in_window(), None);
        ctx.publish(&end.tally);
    }
    if ctx.aborted() {
        end.error = None;
    }
    end.socket_facts(s);
    end
}

/// A padded counter shared by an open-loop flow's two threads.
#[repr(align(64))]
#[derive(Default)]
struct PaddedU64(AtomicU64);

/// Open-loop state shared by a flow's sender and receiver threads.
#[derive(Default)]
struct OpenState {
    sent: PaddedU64,
    received: PaddedU64,
    sender_done: AtomicBool,
    sender_failed: AtomicBool,
    receiver_done: AtomicBool,
}

/// The sender of an open-loop flow: request `k` leaves at its slot (or as soon as the cap
/// allows, keeping its slot for the latency). Returns (sent, peak outstanding, error).
fn open_sender(
    ctx: &FlowCtx,
    s: &TcpStream,
    ol: &OpenLoop,
    st: &OpenState,
) -> (u64, u64, Option<FlowError>) {
    let req = payload(ctx.cfg.request_size_bytes, ctx.cfg.timing.buffer_offset);
    let cap = u64::from(ol.max_outstanding.max(1));
    let schedule = Schedule::per_second(ctx.shared.start, ol.per_s);
    let give_up =
        || ctx.aborted() || ctx.drain_expired() || st.receiver_done.load(Ordering::Acquire);
    let stop = || ctx.stopping();
    let mut k = 0u64;
    let mut peak = 0u64;
    let mut error = None;
    'send: while let Some(due) = schedule.due(k) {
        if !wait_until(due, Duration::ZERO, &stop) {
            break;
        }
        loop {
            let outstanding = k.saturating_sub(st.received.0.load(Ordering::Acquire));
            if outstanding < cap {
                peak = peak.max(outstanding + 1);
                break;
            }
            if ctx.stopping() || st.receiver_done.load(Ordering::Acquire) {
                break 'send;
            }
            thread::sleep(Duration::from_micros(100));
        }
        if let Err(e) = write_full(s, &req, &give_up) {
            if !ctx.aborted() && !st.receiver_done.load(Ordering::Acquire) {
                error = Some(e.at(Step::RequestWrite, ctx.cfg.timing.drain_limit));
            }
            st.sender_failed.store(true, Ordering::Release);
            break;
        }
        k += 1;
        st.sent.0.store(k, Ordering::Release);
    }
    st.sender_done.store(true, Ordering::Release);
    (k, peak, error)
}

/// The receiver of an open-loop flow: response `j` answers request `j` (TCP keeps order);
/// its latency runs from request `j`'s scheduled time.
fn open_receiver(ctx: &FlowCtx, s: &TcpStream, ol: &OpenLoop, st: &OpenState, end: &mut FlowEnd) {
    let mut resp = buffers::zeroed(ctx.cfg.response_size_bytes, ctx.cfg.timing.buffer_offset);
    let schedule = Schedule::per_second(ctx.shared.start, ol.per_s);
    let mut j = 0u64;
    loop {
        let all_answered =
            || st.sender_done.load(Ordering::Acquire) && st.sent.0.load(Ordering::Acquire) <= j;
        let give_up = || {
            ctx.aborted()
                || ctx.drain_expired()
                || st.sender_failed.load(Ordering::Acquire)
                || all_answered()
        };
        match read_full(s, &mut resp, &give_up) {
            Ok(()) => {}
            Err(Stall::GaveUp { partial: false })
                if all_answered() || ctx.aborted() || st.sender_failed.load(Ordering::Acquire) =>
            {
                break
            }
            Err(e) => {
                end.error = Some(e.at(Step::ResponseRead, ctx.cfg.timing.drain_limit));
                break;
            }
        }
        let now = Instant::now();
        let scheduled = schedule.due(j).unwrap_or(now);
        j += 1;
        st.received.0.store(j, Ordering::Release);
        ctx.client_transaction(&mut end.tally, now.saturating_duration_since(scheduled));
    }
    st.receiver_done.store(true, Ordering::Release);
}

pub(super) fn client_open(
    ctx: &FlowCtx,
    s: &TcpStream,
    ol: &OpenLoop,
    tid_tx: mpsc::Sender<(usize, i32)>,
) -> FlowEnd {
    let st = &OpenState::default();
    let mut end = FlowEnd::new(Tally::new(true));
    thread::scope(|sc| {
        let sender_slot = 2 * ctx.idx + 1;
        let tx = tid_tx.clone();
        let cpu = ctx.cfg.timing.pin.thread_cpu(sender_slot);
        let spawned = thread::Builder::new()
            .name(format!("wb-rr-send-{}", ctx.flow))
            .spawn_scoped(sc, move || {
                let final_cpu = &ctx.shared.final_cpu;
                account_thread(final_cpu, sender_slot, tx, cpu, || {
                    open_sender(ctx, s, ol, st)
                })
            });
        drop(tid_tx);
        let sender = match spawned {
            Ok(h) => h,
            Err(e) => {
                end.error = Some(FlowError::os(Step::ThreadStart, &e));
                return;
            }
        };
        open_receiver(ctx, s, ol, st, &mut end);
        match sender.join() {
            Ok(((sent, peak, err), pin_err)) => {
                end.open_loop = Some((sent, peak));
                if end.error.is_none() {
                    end.error = err;
                }
                if let Some(e) = pin_err {
                    end.warnings.push(Warning::PinFailed {
                        thread: DataThread::OpenLoopSender(ctx.flow),
                        error: OsError::from(&e),
                    });
                }
            }
            Err(_) => end.error = Some(FlowError::panicked()),
        }
    });
    finish_flow(ctx, s, &mut end);
    end
}
