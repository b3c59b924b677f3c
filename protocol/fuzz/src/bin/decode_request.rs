//! Any bytes a client may send: cut into frames and decoded as requests, and
//! a produce's records decoded too. Nothing may panic, abort or hang.

#[path = "../../../tests/support/feed.rs"]
mod feed;

fn main() {
    afl::fuzz!(|data: &[u8]| feed::feed(data));
}
