//! The Love Letter state machine: setup, turns, round and match ends; the card effects are in
//! `effects`.

mod effects;

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::cards::{CardId, Edition, Role};
use super::error::Error;
use super::types::{
    Action, Bottom, Config, Event, PlayerView, RoundEnd, RoundResult, TokenReason, View,
};
use crate::fixed::{Blank, FixedVec};
use crate::{
    Discard, Game, GameRng, Observation, Outcome, Record, Seat, SeatSet, Seed, SetupError, Viewer,
};

type Obs = Vec<Observation<Event>>;

/// Cards kept inline: the state has a bound for each list (a hand holds at most three, the
/// whole deck is 21 cards), so playing never allocates.
type Cards<const N: usize> = FixedVec<CardId, N>;
/// Every card of the largest edition.
const DECK: usize = 21;
/// The most seats of any edition.
const MAX_SEATS: usize = 6;

impl Blank for CardId {
    const BLANK: Self = CardId::ALL[0];
}

/// One seat's part of the state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Player {
    /// One card between turns, two on one's own turn, up to three during a Chancellor choice
    /// (the card held before, then the drawn ones). Empty once out.
    hand: Cards<3>,
    /// Played and discarded cards this round, in order.
    played: Cards<DECK>,
    out: bool,
    protected: bool,
    tokens: u8,
}

/// A whole Love Letter match. Serialises completely (the seeded stream included), so a restored
/// state continues exactly as the original would.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoveLetter {
    edition: Edition,
    rng: GameRng,
    round: u32,
    /// Whose turn it is; meaningless once the match is over.
    turn: Seat,
    players: Vec<Player>,
    /// The draw pile; its top is the *last* element, so drawing is a pop.
    deck: Cards<DECK>,
    /// The face-down card set aside at the start of the round, until a Prince draws it.
    set_aside: Option<CardId>,
    /// The three open cards of a 2-player round.
    face_up: Cards<DECK>,
    /// While the current player chooses after a Chancellor: how many cards it drew (1 or 2).
    chancellor: u8,
    last_round: Option<LastRound>,
    winners: Option<SeatSet>,
}

/// The last round's [`RoundResult`], kept inline; it reads and writes as one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "RoundResult", try_from = "RoundResult")]
struct LastRound {
    round: u32,
    reason: RoundEnd,
    hands: FixedVec<Option<CardId>, MAX_SEATS>,
    set_aside: Option<CardId>,
    winners: SeatSet,
    spy_bonus: Option<Seat>,
    tokens: FixedVec<u8, MAX_SEATS>,
}

impl From<&LastRound> for RoundResult {
    fn from(last: &LastRound) -> Self {
        RoundResult {
            round: last.round,
            reason: last.reason,
            hands: last.hands.to_vec(),
            set_aside: last.set_aside,
            winners: last.winners,
            spy_bonus: last.spy_bonus,
            tokens: last.tokens.to_vec(),
        }
    }
}

impl From<LastRound> for RoundResult {
    fn from(last: LastRound) -> Self {
        RoundResult::from(&last)
    }
}

impl TryFrom<RoundResult> for LastRound {
    type Error = String;

    fn try_from(result: RoundResult) -> Result<Self, String> {
        if result.hands.len() > MAX_SEATS || result.tokens.len() > MAX_SEATS {
            return Err(format!("a round result of more than {MAX_SEATS} seats"));
        }
        let mut hands = FixedVec::new();
        hands.extend_from_slice(&result.hands);
        let mut tokens = FixedVec::new();
        tokens.extend_from_slice(&result.tokens);
        Ok(LastRound {
            round: result.round,
            reason: result.reason,
            hands,
            set_aside: result.set_aside,
            winners: result.winners,
            spy_bonus: result.spy_bonus,
            tokens,
        })
    }
}

/// Whom a card chooses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Targeting {
    Nobody,
    /// Another player still in and unprotected (Guard, Priest, Baron, King).
    Other,
    /// Any player still in and unprotected, oneself included (Prince).
    Anyone,
}

fn targeting(role: Role) -> Targeting {
    match role {
        Role::Guard | Role::Priest | Role::Baron | Role::King => Targeting::Other,
        Role::Prince => Targeting::Anyone,
        Role::Spy | Role::Handmaid | Role::Chancellor | Role::Countess | Role::Princess => {
            Targeting::Nobody
        }
    }
}

/// Tokens a player needs to win the match, by number of players.
pub(super) fn tokens_to_win(seats: u8) -> u8 {
    match seats {
        0..=2 => 6,
        3 => 5,
        4 => 4,
        _ => 3,
    }
}

impl LoveLetter {
    fn seat_count(&self) -> u8 {
        self.players.len() as u8
    }

    fn over(&self) -> bool {
        self.winners.is_some()
    }

    /// Whether `target` may be chosen by a card now.
    fn choosable(&self, target: Seat) -> bool {
        self.players
            .get(target as usize)
            .is_some_and(|p| !p.out && !p.protected)
    }

    fn any_other_choosable(&self, seat: Seat) -> bool {
        (0..self.seat_count()).any(|t| t != seat && self.choosable(t))
    }

    /// The role the Guard may name in this edition.
    fn guessable(&self) -> impl Iterator<Item = Role> + '_ {
        Role::ALL
            .into_iter()
            .filter(|r| *r != Role::Guard && self.edition.has_role(*r))
    }

    /// With the Countess and a King or Prince in hand, only the Countess may be played.
    fn countess_forced(hand: &[CardId]) -> bool {
        hand.iter().any(|c| c.role() == Role::Countess)
            && hand
                .iter()
                .any(|c| matches!(c.role(), Role::King | Role::Prince))
    }

    fn deal_round<R: Record<Event>>(&mut self, first: Seat, order: &[CardId], obs: &mut R) {
        self.round += 1;
        for p in &mut self.players {
            p.hand.clear();
            p.played.clear();
            p.out = false;
            p.protected = false;
        }
        let n = self.seat_count();
        let mut cards = order.iter().copied();
        self.set_aside = cards.next();
        self.face_up.clear();
        if n == 2 {
            for card in cards.by_ref().take(3) {
                self.face_up.push(card);
            }
        }
        for i in 0..n {
            let seat = (first + i) % n;
            if let Some(card) = cards.next() {
                self.players[seat as usize].hand.push(card);
            }
        }
        self.deck.clear();
        for card in cards.rev() {
            self.deck.push(card);
        }
        self.chancellor = 0;
        if R::KEEPS {
            obs.push(Observation::public(Event::RoundStarted {
                round: self.round,
                first_player: first,
                face_up: self.face_up.to_vec(),
            }));
            for seat in 0..n {
                if let Some(&card) = self.players[seat as usize].hand.first() {
                    obs.push(Observation::to_seat(seat, Event::Dealt { seat, card }));
                }
            }
        }
        self.start_turn(first, obs);
    }

    fn start_turn<R: Record<Event>>(&mut self, seat: Seat, obs: &mut R) {
        self.turn = seat;
        let player = &mut self.players[seat as usize];
        player.protected = false;
        obs.push_with(|| Observation::public(Event::TurnStarted { seat }));
        if let Some(card) = self.deck.pop() {
            player.hand.push(card);
            obs.push_with(|| Observation::to_seat(seat, Event::Drew { seat, card }));
        }
    }

    fn eliminate<R: Record<Event>>(&mut self, seat: Seat, obs: &mut R) {
        let player = &mut self.players[seat as usize];
        player.out = true;
        player.protected = false;
        let discarded = player.hand;
        player.hand.clear();
        player.played.extend_from_slice(&discarded);
        obs.push_with(|| {
            Observation::public(Event::PlayerOut {
                seat,
                discarded: discarded.to_vec(),
            })
        });
    }

    fn end_turn<R: Record<Event>>(&mut self, obs: &mut R) {
        let n = self.seat_count();
        let in_count = self.players.iter().filter(|p| !p.out).count();
        if in_count <= 1 {
            self.end_round(RoundEnd::LastStanding, obs);
        } else if self.deck.is_empty() {
            self.end_round(RoundEnd::DeckEmpty, obs);
        } else {
            let next = (1..=n)
                .map(|i| (self.turn + i) % n)
                .find(|s| !self.players[*s as usize].out)
                .unwrap_or(self.turn);
            self.start_turn(next, obs);
        }
    }

    fn end_round<R: Record<Event>>(&mut self, reason: RoundEnd, obs: &mut R) {
        let n = self.seat_count();
        // Results, tokens, the next deal and the next turn: room for all of it at once.
        obs.reserve(8 + 2 * n as usize);
        let hand_value = |p: &Player| p.hand.iter().map(|c| c.value()).max();
        let best = self
            .players
            .iter()
            .filter(|p| !p.out)
            .filter_map(hand_value)
            .max();
        let mut winners = SeatSet::EMPTY;
        for (seat, p) in self.players.iter().enumerate() {
            let wins = match reason {
                RoundEnd::LastStanding => !p.out,
                RoundEnd::DeckEmpty => !p.out && hand_value(p) == best,
            };
            if wins {
                winners.insert(seat as Seat);
            }
        }
        let mut spies = (0..n).filter(|s| {
            let p = &self.players[*s as usize];
            !p.out && p.played.iter().any(|c| c.role() == Role::Spy)
        });
        let spy_bonus = match (spies.next(), spies.next()) {
            (Some(seat), None) => Some(seat),
            _ => None,
        };
        for seat in winners.iter() {
            let p = &mut self.players[seat as usize];
            p.tokens = p.tokens.saturating_add(1);
        }
        if let Some(seat) = spy_bonus {
            let p = &mut self.players[seat as usize];
            p.tokens = p.tokens.saturating_add(1);
        }
        for p in &mut self.players {
            p.protected = false;
        }
        let mut result = LastRound {
            round: self.round,
            reason,
            hands: FixedVec::new(),
            set_aside: self.set_aside,
            winners,
            spy_bonus,
            tokens: FixedVec::new(),
        };
        for p in &self.players {
            result.hands.push(match reason {
                RoundEnd::DeckEmpty if !p.out => p.hand.first().copied(),
                _ => None,
            });
            result.tokens.push(p.tokens);
        }
        if R::KEEPS {
            obs.push(Observation::public(Event::RoundEnded(RoundResult::from(
                &result,
            ))));
            // Token events carry running totals: a spy-bonus winner shows its win, then its
            // bonus.
            for seat in winners.iter() {
                let bonus = u8::from(spy_bonus == Some(seat));
                let total = self.players[seat as usize].tokens - bonus;
                obs.push(Observation::public(Event::TokenGained {
                    seat,
                    reason: TokenReason::RoundWin,
                    total,
                }));
            }
            if let Some(seat) = spy_bonus {
                let total = self.players[seat as usize].tokens;
                obs.push(Observation::public(Event::TokenGained {
                    seat,
                    reason: TokenReason::SpyBonus,
                    total,
                }));
            }
        }
        self.last_round = Some(result);

        let goal = tokens_to_win(n);
        let champions: SeatSet = (0..n)
            .filter(|s| self.players[*s as usize].tokens >= goal)
            .collect();
        if !champions.is_empty() {
            self.winners = Some(champions);
            obs.push_with(|| {
                Observation::public(Event::MatchEnded {
                    winners: champions,
                    tokens: self.players.iter().map(|p| p.tokens).collect(),
                })
            });
            return;
        }
        // The round's winner starts the next; after a tie the seed picks one of the tied.
        let first = match winners.len() {
            0 => self.turn,
            1 => winners.iter().next().unwrap_or(self.turn),
            k => {
                let pick = self.rng.below(k as u32) as usize;
                winners.iter().nth(pick).unwrap_or(self.turn)
            }
        };
        // Shuffled on the stack: a round starts often enough in replays for this to matter.
        let cards = self.edition.cards();
        let mut order = [CardId::ALL[0]; 21];
        let order = &mut order[..cards.len()];
        order.copy_from_slice(cards);
        self.rng.shuffle(order);
        self.deal_round(first, order, obs);
    }

    fn push_plays(&self, seat: Seat, card: CardId, out: &mut Vec<Action>) {
        let play = |target, guess| Action::Play {
            card,
            target,
            guess,
        };
        match targeting(card.role()) {
            Targeting::Nobody => out.push(play(None, None)),
            kind => {
                let targets = (0..self.seat_count())
                    .filter(|t| self.choosable(*t) && (*t != seat || kind == Targeting::Anyone));
                let before = out.len();
                for t in targets {
                    if card.role() == Role::Guard {
                        out.extend(self.guessable().map(|g| play(Some(t), Some(g))));
                    } else {
                        out.push(play(Some(t), None));
                    }
                }
                if out.len() == before {
                    out.push(play(None, None));
                }
            }
        }
    }
}

impl Game for LoveLetter {
    const KIND: &'static str = "love-letter";
    const RULES_VERSION: u32 = 1;

    type Config = Config;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Error = Error;

    fn seat_range(config: &Config) -> RangeInclusive<u8> {
        2..=config.edition.max_players()
    }

    fn setup(config: &Config, seats: u8, seed: Seed) -> Result<Self, SetupError> {
        SetupError::check_seats::<Self>(config, seats)?;
        if let Some(first) = config.first_player
            && first >= seats
        {
            return Err(SetupError::InvalidConfig(format!(
                "first player {first} is not one of the {seats} seats"
            )));
        }
        let cards = config.edition.cards();
        if let Some(deck) = &config.deck {
            let mut sorted = deck.clone();
            sorted.sort();
            if sorted != cards {
                return Err(SetupError::InvalidConfig(format!(
                    "the deck must hold each of the {} cards of the edition exactly once",
                    cards.len()
                )));
            }
        }
        let mut rng = GameRng::new(seed);
        let first = match config.first_player {
            Some(seat) => seat,
            None => rng.below(u32::from(seats)) as Seat,
        };
        let order = match &config.deck {
            Some(deck) => deck.clone(),
            None => {
                let mut order = cards.to_vec();
                rng.shuffle(&mut order);
                order
            }
        };
        let mut game = LoveLetter {
            edition: config.edition,
            rng,
            round: 0,
            turn: first,
            players: vec![Player::default(); seats as usize],
            deck: Cards::new(),
            set_aside: None,
            face_up: Cards::new(),
            chancellor: 0,
            last_round: None,
            winners: None,
        };
        game.deal_round(first, &order, &mut Discard);
        Ok(game)
    }

    /// The first round's deal and the first player's draw, as `setup` made them: the same
    /// observations a later round's deal gives, rebuilt from the fresh state.
    fn setup_observations(&self) -> Vec<Observation<Event>> {
        let mut obs = vec![Observation::public(Event::RoundStarted {
            round: self.round,
            first_player: self.turn,
            face_up: self.face_up.to_vec(),
        })];
        for seat in 0..self.seat_count() {
            if let Some(&card) = self.players[seat as usize].hand.first() {
                obs.push(Observation::to_seat(seat, Event::Dealt { seat, card }));
            }
        }
        let first = self.turn;
        obs.push(Observation::public(Event::TurnStarted { seat: first }));
        if let Some(&card) = self.players[first as usize].hand.get(1) {
            obs.push(Observation::to_seat(
                first,
                Event::Drew { seat: first, card },
            ));
        }
        obs
    }

    fn seats(&self) -> u8 {
        self.seat_count()
    }

    fn awaiting(&self) -> SeatSet {
        if self.over() {
            SeatSet::EMPTY
        } else {
            SeatSet::single(self.turn)
        }
    }

    fn legal_actions(&self, seat: Seat) -> Vec<Action> {
        let mut out = Vec::new();
        self.legal_actions_into(seat, &mut out);
        out
    }

    fn legal_actions_into(&self, seat: Seat, out: &mut Vec<Action>) {
        if self.over() || seat != self.turn || seat >= self.seat_count() {
            return;
        }
        let hand = &self.players[seat as usize].hand;
        if self.chancellor > 0 {
            for (i, &keep) in hand.iter().enumerate() {
                let mut rest = Cards::<2>::new();
                for (j, &c) in hand.iter().enumerate() {
                    if j != i {
                        rest.push(c);
                    }
                }
                out.push(Action::ChancellorKeep {
                    keep,
                    bottom: Bottom::from_slice(&rest),
                });
                if rest.len() == 2 {
                    out.push(Action::ChancellorKeep {
                        keep,
                        bottom: Bottom::from_slice(&[rest[1], rest[0]]),
                    });
                }
            }
            return;
        }
        let mut cards = *hand;
        cards.sort();
        let forced = Self::countess_forced(&cards);
        for &card in cards.iter() {
            if forced && card.role() != Role::Countess {
                continue;
            }
            self.push_plays(seat, card, out);
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Obs, Error> {
        let mut obs = Vec::with_capacity(8);
        self.apply_into(seat, action, &mut obs)?;
        Ok(obs)
    }

    fn apply_into<R: Record<Event>>(
        &mut self,
        seat: Seat,
        action: &Action,
        obs: &mut R,
    ) -> Result<(), Error> {
        if self.over() {
            return Err(Error::MatchOver);
        }
        if seat >= self.seat_count() {
            return Err(Error::NoSuchSeat(seat));
        }
        if seat != self.turn {
            return Err(Error::NotYourTurn);
        }
        match action {
            Action::Play {
                card,
                target,
                guess,
            } => {
                if self.chancellor > 0 {
                    return Err(Error::ChancellorChoicePending);
                }
                self.validate_play(seat, *card, *target, *guess)?;
                self.play(seat, *card, *target, *guess, obs);
            }
            Action::ChancellorKeep { keep, bottom } => {
                if self.chancellor == 0 {
                    return Err(Error::NoChancellorChoice);
                }
                self.validate_keep(seat, *keep, bottom)?;
                self.keep(seat, *keep, bottom, obs);
            }
        }
        Ok(())
    }

    fn view(&self, viewer: Viewer) -> View {
        let own = match viewer {
            Viewer::Seat(s) => self.players.get(s as usize),
            Viewer::Spectator => None,
        };
        let pending = self.chancellor > 0 && viewer == Viewer::Seat(self.turn);
        let (hand, chancellor_choice) = match own {
            Some(p) if pending => {
                let split = p.hand.len().saturating_sub(self.chancellor as usize);
                (p.hand[..split].to_vec(), Some(p.hand[split..].to_vec()))
            }
            Some(p) => (p.hand.to_vec(), None),
            None => (Vec::new(), None),
        };
        View {
            viewer,
            edition: self.edition,
            hand,
            players: self
                .players
                .iter()
                .enumerate()
                .map(|(seat, p)| PlayerView {
                    seat: seat as Seat,
                    played: p.played.to_vec(),
                    out: p.out,
                    protected: p.protected,
                    tokens: p.tokens,
                    hand_count: p.hand.len() as u8,
                })
                .collect(),
            deck_count: self.deck.len() as u8,
            face_up: self.face_up.to_vec(),
            round: self.round,
            turn: (!self.over()).then_some(self.turn),
            chancellor_choice,
            tokens_to_win: tokens_to_win(self.seat_count()),
            last_round: self.last_round.as_ref().map(RoundResult::from),
            winners: self.winners,
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        self.winners.map(|winners| Outcome {
            winners,
            scores: self.players.iter().map(|p| i32::from(p.tokens)).collect(),
        })
    }

    fn default_action(&self, seat: Seat) -> Option<Action> {
        self.legal_actions(seat).into_iter().next()
    }
}
