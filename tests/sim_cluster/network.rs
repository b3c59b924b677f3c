//! The simulated network under the nodes' raft ports: byte streams, as TCP
//! gives them, through which the real links, framing and server talk. Each
//! write crosses in order after a delay the seed draws (writes in flight
//! together overlap, as on a wire); a link that is cut carries nothing
//! until it heals, so what was written waits, and arrives late (as TCP's
//! retransmissions bring it); a connection breaks now and then (the
//! weather's loss) and whenever either end's process dies, each side then
//! reading the end of the stream. A dial across a cut times out; a dial to
//! a node that is down is refused at once.

use queen::seams::raft::{Accepting, Dialing, Listener, Stream, Transport};
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How long a dial across a cut waits before it gives up (a SYN unanswered).
const DIAL_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a write held at a cut looks again.
const CUT_POLL: Duration = Duration::from_millis(5);

/// How the network behaves for a while.
#[derive(Debug, Clone, Copy)]
pub struct Weather {
    /// Writes that break their connection, per million.
    pub loss_ppm: u32,
    /// The longest ordinary delay of one way, in microseconds.
    pub delay_us: u64,
    /// Writes delayed far longer (up to 100 times), per million.
    pub slow_ppm: u32,
}

impl Default for Weather {
    fn default() -> Self {
        Weather { loss_ppm: 0, delay_us: 2_000, slow_ppm: 0 }
    }
}

/// What the network did.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetCounts {
    /// Writes carried across.
    pub delivered: u64,
    /// Connections broken by the weather or by a process's death.
    pub lost: u64,
    /// Dials refused (the node was down) or timed out (across a cut).
    pub refused: u64,
}

/// The raft address node `id` listens on.
pub fn address(id: u64) -> String {
    format!("node{id}")
}

#[derive(Clone)]
pub struct Net(Arc<Mutex<State>>);

struct State {
    rng: StdRng,
    /// Each node's current process.
    processes: BTreeMap<u64, Process>,
    /// Directed links that carry nothing.
    cut: BTreeSet<(u64, u64)>,
    weather: Weather,
    counts: NetCounts,
}

struct Process {
    number: u64,
    /// Where its raft port's connections arrive; none once it is down.
    accept: Option<mpsc::UnboundedSender<(Stream, String)>>,
    /// Turns false when it dies: every connection it has breaks.
    alive: watch::Sender<bool>,
}

impl Net {
    pub fn new(rng: StdRng) -> Self {
        Net(Arc::new(Mutex::new(State {
            rng,
            processes: BTreeMap::new(),
            cut: BTreeSet::new(),
            weather: Weather::default(),
            counts: NetCounts::default(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("network lock")
    }

    /// Node `id`'s next process: how it dials, and its raft port.
    pub fn process(&self, id: u64) -> (Dialer, Port) {
        let mut s = self.state();
        let number = s.processes.get(&id).map_or(1, |p| p.number + 1);
        if let Some(old) = s.processes.get(&id) {
            old.alive.send_replace(false);
        }
        let (accept, arrivals) = mpsc::unbounded_channel();
        s.processes.insert(id, Process { number, accept: Some(accept), alive: watch::Sender::new(true) });
        (Dialer { net: self.clone(), me: id, number }, Port { arrivals })
    }

    /// Node `id`'s process is gone: its port closes, and every connection
    /// it had breaks.
    pub fn down(&self, id: u64) {
        if let Some(p) = self.state().processes.get_mut(&id) {
            p.accept = None;
            p.alive.send_replace(false);
        }
    }

    pub fn set_weather(&self, weather: Weather) {
        self.state().weather = weather;
    }

    /// Cuts the link from `from` to `to`.
    pub fn cut(&self, from: u64, to: u64) {
        self.state().cut.insert((from, to));
    }

    pub fn heal(&self) {
        self.state().cut.clear();
    }

    pub fn counts(&self) -> NetCounts {
        self.state().counts
    }

    fn is_cut(&self, from: u64, to: u64) -> bool {
        self.state().cut.contains(&(from, to))
    }

    /// When a write from `from` to `to` made now arrives, no sooner than
    /// the one before it on its way (`after`); none when it breaks the
    /// connection.
    fn arrival(&self, after: Instant) -> Option<Instant> {
        let s = &mut *self.state();
        if s.weather.loss_ppm > 0 && s.rng.gen_range(0..1_000_000) < s.weather.loss_ppm {
            s.counts.lost += 1;
            return None;
        }
        let us = s.rng.gen_range(0..=s.weather.delay_us);
        let slow = s.weather.slow_ppm > 0 && s.rng.gen_range(0..1_000_000) < s.weather.slow_ppm;
        let delay = Duration::from_micros(if slow { us * s.rng.gen_range(10..100) } else { us });
        Some((Instant::now() + delay).max(after))
    }

    /// Opens a connection from node `from`'s process `number` to `to`'s
    /// live one.
    async fn dial(&self, (from, number): (u64, u64), to: u64) -> io::Result<Stream> {
        let opened = {
            let s = &mut *self.state();
            let cut = s.cut.contains(&(from, to)) || s.cut.contains(&(to, from));
            let mine = s.processes.get(&from).filter(|p| p.number == number && *p.alive.borrow());
            let Some(mine) = mine else { return Err(broken()) };
            match s.processes.get(&to) {
                Some(theirs) if !cut && theirs.accept.is_some() => {
                    let (near, far) = self.pair((from, mine.alive.subscribe()), (to, theirs.alive.subscribe()));
                    let accept = theirs.accept.as_ref().expect("checked above");
                    accept.send((far, address(from))).ok().map(|_| near)
                }
                _ if cut => {
                    s.counts.refused += 1;
                    None
                }
                _ => {
                    s.counts.refused += 1;
                    super::node::record(("refused", from, to));
                    return Err(io::Error::new(io::ErrorKind::ConnectionRefused, format!("node {to} is down")));
                }
            }
        };
        super::node::record(("dial", from, to, opened.is_some()));
        match opened {
            Some(stream) => Ok(stream),
            None => {
                tokio::time::sleep(DIAL_TIMEOUT).await;
                Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer from node {to} across the cut")))
            }
        }
    }

    /// A connection between two processes: each end's writes cross to the
    /// other through a carrier task of their own.
    fn pair(&self, a: (u64, watch::Receiver<bool>), b: (u64, watch::Receiver<bool>)) -> (Stream, Stream) {
        let (a_out, a_in) = self.way(a.0, b.0, [a.1.clone(), b.1.clone()]);
        let (b_out, b_in) = self.way(b.0, a.0, [b.1, a.1]);
        let end = |out, inn| -> Stream {
            Box::new(End { net: self.clone(), out: Some(out), inn, held: Vec::new(), last: Instant::now() })
        };
        (end(a_out, b_in), end(b_out, a_in))
    }

    /// One way of a connection, from `from` to `to`: the sender its writer
    /// writes to, and the receiver its reader reads from.
    fn way(
        &self,
        from: u64,
        to: u64,
        lives: [watch::Receiver<bool>; 2],
    ) -> (Outgoing, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (out, mut carried) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
        let (deliver, inn) = mpsc::unbounded_channel();
        let net = self.clone();
        tokio::spawn(async move {
            let [mut a, mut b] = lives;
            let death = async move {
                tokio::select! {
                    _ = a.wait_for(|alive| !alive) => {}
                    _ = b.wait_for(|alive| !alive) => {}
                }
            };
            let carry = async {
                while let Some((at, bytes)) = carried.recv().await {
                    tokio::time::sleep_until(at).await;
                    while net.is_cut(from, to) {
                        tokio::time::sleep(CUT_POLL).await;
                    }
                    if deliver.send(bytes).is_err() {
                        return;
                    }
                    net.state().counts.delivered += 1;
                }
            };
            tokio::select! {
                _ = death => { net.state().counts.lost += 1; }
                _ = carry => {}
            }
        });
        (out, inn)
    }
}

/// Where an end's writes go, each with when it arrives.
type Outgoing = mpsc::UnboundedSender<(Instant, Vec<u8>)>;

/// One end of a connection.
struct End {
    net: Net,
    /// Toward the other end; none once shut down or broken.
    out: Option<Outgoing>,
    inn: mpsc::UnboundedReceiver<Vec<u8>>,
    /// Bytes arrived and not read yet.
    held: Vec<u8>,
    /// When the last write sent arrives: the next arrives no sooner.
    last: Instant,
}

fn broken() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the simulated connection broke")
}

impl AsyncWrite for End {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let Some(out) = this.out.as_ref().filter(|o| !o.is_closed()) else { return Poll::Ready(Err(broken())) };
        match this.net.arrival(this.last) {
            Some(at) => {
                this.last = at;
                let sent = out.send((at, buf.to_vec()));
                Poll::Ready(sent.map(|_| buf.len()).map_err(|_| broken()))
            }
            None => {
                this.out = None;
                Poll::Ready(Err(broken()))
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().out = None;
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for End {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.held.is_empty() {
            match this.inn.poll_recv(cx) {
                Poll::Ready(Some(bytes)) => this.held = bytes,
                // The other end is gone: the end of the stream.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = this.held.len().min(buf.remaining());
        buf.put_slice(&this.held[..n]);
        this.held.drain(..n);
        Poll::Ready(Ok(()))
    }
}

/// How one process dials its peers.
pub struct Dialer {
    net: Net,
    me: u64,
    number: u64,
}

impl Transport for Dialer {
    fn dial(&self, addr: &str) -> Dialing {
        let (net, me) = (self.net.clone(), (self.me, self.number));
        let to = addr.strip_prefix("node").and_then(|id| id.parse::<u64>().ok());
        Box::pin(async move {
            let to = to.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a simulated address"))?;
            net.dial(me, to).await
        })
    }
}

/// One process's raft port.
pub struct Port {
    arrivals: mpsc::UnboundedReceiver<(Stream, String)>,
}

impl Listener for Port {
    fn accept(&mut self) -> Accepting<'_> {
        Box::pin(async move { self.arrivals.recv().await.map(Ok) })
    }
}
