//! Seats changing hands before the start, for every game and seat count: a table model over
//! the `Game` trait, as the server drives it. Holders join, leave and rejoin at random while
//! the match is open; the match is set up only when every seat is held, from a seed mixed
//! from a base seed and the nonces of the holders at that moment; from then on each holder
//! receives the observations addressed to its seat and its seat's views.
//!
//! Checked: a holder gone before the start received nothing; a holder's messages are exactly
//! those its seat may see, from the start on; and what the holders at the start receive does
//! not depend on who came and went before (a different churn ending with the same holders and
//! nonces gives every one of them the same messages, bit for bit), while another holder's
//! nonce changes the deal.
//!
//! The seed mix here stands in for the server's SHA-256 (the rules crate hashes nothing): it
//! only needs to depend on every nonce.

use std::fmt::Debug;

use missive_rules::amori::Amori;
use missive_rules::lopti::Lopti;
use missive_rules::love_letter::{Config as LoveLetterConfig, Edition, LoveLetter};
use missive_rules::{Game, GameRng, Seat, Seed, Viewer};

/// One message a holder received: an observation's event (as JSON) or a view.
#[derive(Debug, Clone, PartialEq)]
enum Message {
    Observed(serde_json::Value),
    Viewed(String),
}

/// One seat holder: its seat, its nonce, whether it held the seat at the start, and what it
/// received.
#[derive(Debug, Clone)]
struct Holder {
    seat: Seat,
    nonce: u64,
    at_start: bool,
    inbox: Vec<Message>,
}

/// The shuffle's seed from a base seed and each seat's holder's nonce, in seat order.
fn deal_seed(base: u64, nonces: &[u64]) -> Seed {
    let mut rng = GameRng::new(Seed::from_u64(base));
    let mut seed = rng.fork();
    for nonce in nonces {
        for (b, n) in seed.0.iter_mut().zip(nonce.to_le_bytes()) {
            *b ^= n;
        }
        seed = GameRng::new(seed).fork();
    }
    seed
}

/// Random joins and leaves until every seat is held: the holders, in the order they came.
/// `nonces` draws each joining holder's nonce.
fn churn(seats: u8, rng: &mut GameRng, nonces: &mut dyn FnMut(Seat) -> u64) -> Vec<Holder> {
    let mut holders: Vec<Holder> = Vec::new();
    let mut held: Vec<Option<usize>> = vec![None; usize::from(seats)];
    let mut left = 0;
    loop {
        let free: Vec<Seat> = (0..seats)
            .filter(|s| held[usize::from(*s)].is_none())
            .collect();
        if free.is_empty() {
            break;
        }
        let taken: Vec<usize> = held.iter().flatten().copied().collect();
        let last_seat = free.len() == 1;
        // The table never fills before someone has left.
        if !taken.is_empty() && (rng.below(3) == 0 || (last_seat && left == 0)) {
            let h = taken[rng.below(taken.len() as u32) as usize];
            held[usize::from(holders[h].seat)] = None;
            left += 1;
        } else {
            let seat = free[rng.below(free.len() as u32) as usize];
            held[usize::from(seat)] = Some(holders.len());
            holders.push(Holder {
                seat,
                nonce: nonces(seat),
                at_start: false,
                inbox: Vec::new(),
            });
        }
    }
    for h in held.into_iter().flatten() {
        holders[h].at_start = true;
    }
    holders
}

/// Deals from the holders at the start and plays up to `moves` random legal actions, filling
/// each holder's inbox with what its seat is told and shown. Returns the state at the end.
fn play<G: Game>(
    config: &G::Config,
    seats: u8,
    base: u64,
    holders: &mut [Holder],
    moves: usize,
) -> G
where
    G::Event: Debug,
{
    let mut nonces = vec![0; usize::from(seats)];
    for holder in holders.iter().filter(|h| h.at_start) {
        nonces[usize::from(holder.seat)] = holder.nonce;
    }
    let mut state = G::setup(config, seats, deal_seed(base, &nonces)).expect("setup");
    let mut rng = GameRng::new(Seed::from_u64(base ^ 0xc0ffee));
    let mut told = state.setup_observations();
    for step in 0..=moves {
        for holder in holders.iter_mut().filter(|h| h.at_start) {
            let viewer = Viewer::Seat(holder.seat);
            for o in told.iter().filter(|o| o.audience.includes(viewer)) {
                holder.inbox.push(Message::Observed(
                    serde_json::to_value(&o.event).expect("an event serialises"),
                ));
            }
            holder
                .inbox
                .push(Message::Viewed(format!("{:?}", state.view(viewer))));
        }
        if step == moves || state.outcome().is_some() {
            break;
        }
        let Some((seat, legal)) = state
            .awaiting()
            .iter()
            .map(|s| (s, state.legal_actions(s)))
            .find(|(_, legal)| !legal.is_empty())
        else {
            break;
        };
        let action = &legal[rng.below(legal.len() as u32) as usize];
        told = state.apply(seat, action).expect("a listed action");
    }
    state
}

fn check_game<G: Game>(name: &str, config: &G::Config, seats: u8, seed: u64)
where
    G::Event: Debug,
{
    let ctx = format!("{name}, {seats} seats, seed {seed}");
    let mut rng = GameRng::new(Seed::from_u64(seed));
    let mut nonce_rng = GameRng::new(Seed::from_u64(seed ^ 0x6e6f6e6365));
    let mut holders = churn(seats, &mut rng, &mut |_| {
        u64::from(nonce_rng.below(u32::MAX)) << 8 | 1
    });
    assert!(
        holders.len() > usize::from(seats),
        "{ctx}: seats changed hands"
    );
    let end: G = play(config, seats, seed, &mut holders, 40);

    for holder in &holders {
        if !holder.at_start {
            assert!(
                holder.inbox.is_empty(),
                "{ctx}: a holder gone before the start learnt something"
            );
        }
    }
    // Every seat's holder at the start got exactly what the state shows that seat now.
    for holder in holders.iter().filter(|h| h.at_start) {
        assert_eq!(
            holder.inbox.last(),
            Some(&Message::Viewed(format!(
                "{:?}",
                end.view(Viewer::Seat(holder.seat))
            ))),
            "{ctx}"
        );
    }

    // Another churn ending with the same holders and nonces: the same messages to each.
    let finals: Vec<(Seat, u64)> = holders
        .iter()
        .filter(|h| h.at_start)
        .map(|h| (h.seat, h.nonce))
        .collect();
    let mut other_rng = GameRng::new(Seed::from_u64(seed.wrapping_mul(31) ^ 0xabc));
    let mut other = churn(seats, &mut other_rng, &mut |_| 0);
    // Whoever holds each seat at the start in this churn brings that seat's final nonce; the
    // others' nonces are arbitrary (they leave before the start).
    for h in other.iter_mut() {
        if h.at_start {
            h.nonce = finals.iter().find(|(s, _)| *s == h.seat).expect("a seat").1;
        } else {
            h.nonce = u64::from(other_rng.below(1000));
        }
    }
    play::<G>(config, seats, seed, &mut other, 40);
    for (seat, _) in &finals {
        let first = holders
            .iter()
            .find(|h| h.at_start && h.seat == *seat)
            .expect("holder");
        let second = other
            .iter()
            .find(|h| h.at_start && h.seat == *seat)
            .expect("holder");
        assert_eq!(
            first.inbox, second.inbox,
            "{ctx}: seat {seat}'s holder depends on the churn"
        );
    }
    for h in other.iter().filter(|h| !h.at_start) {
        assert!(h.inbox.is_empty(), "{ctx}");
    }

    // A changed nonce of the last seat's holder deals anew (the seed depends on every nonce).
    let mut nonces: Vec<u64> = vec![0; usize::from(seats)];
    for (seat, nonce) in &finals {
        nonces[usize::from(*seat)] = *nonce;
    }
    let a = deal_seed(seed, &nonces);
    nonces[usize::from(seats - 1)] ^= 1;
    assert_ne!(a, deal_seed(seed, &nonces), "{ctx}");
}

const SEEDS: u64 = 40;

#[test]
fn love_letter_seats_changing_hands_before_the_start_leak_nothing() {
    for edition in [Edition::V2019, Edition::Classic] {
        let config = LoveLetterConfig {
            edition,
            ..LoveLetterConfig::default()
        };
        for seats in LoveLetter::seat_range(&config) {
            for seed in 0..SEEDS {
                check_game::<LoveLetter>(&format!("love letter {edition:?}"), &config, seats, seed);
            }
        }
    }
}

#[test]
fn amori_seats_changing_hands_before_the_start_leak_nothing() {
    let config = <Amori as Game>::Config::default();
    for seats in Amori::seat_range(&config) {
        for seed in 0..SEEDS {
            check_game::<Amori>("amori", &config, seats, seed);
        }
    }
}

#[test]
fn lopti_seats_changing_hands_before_the_start_leak_nothing() {
    let config = <Lopti as Game>::Config::default();
    for seats in Lopti::seat_range(&config) {
        for seed in 0..SEEDS {
            check_game::<Lopti>("lopti", &config, seats, seed);
        }
    }
}
