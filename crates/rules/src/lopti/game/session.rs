//! Between the hands and at their start: creating and cancelling rules, the Rule Vote and its
//! Roshambo, enacting changes, the deal and the swaps. Every refusal comes before the first
//! change to the state.

use super::*;
use crate::lopti::catalogue::{Special, TABLE_RULE_MAX_CHARS, raised_by};

impl Lopti {
    pub(super) fn cancel_rule(
        &mut self,
        seat: Seat,
        id: RuleId,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let rule = self.rule(id)?;
        if rule.creator != seat {
            return Err(Error::NotRuleCreator);
        }
        if rule.status != RuleStatus::Active {
            return Err(Error::RuleNotActive(id));
        }
        if let Some(rule) = self.rules.iter_mut().find(|r| r.id == id) {
            rule.status = RuleStatus::Cancelled;
        }
        out.push(Observation::public(Event::RuleCancelled {
            rule: id,
            by: seat,
        }));
        Ok(())
    }

    pub(super) fn was_removed(&self, body: &RuleBody) -> bool {
        self.rules
            .iter()
            .any(|r| r.status != RuleStatus::Active && r.body == *body)
    }

    pub(super) fn check_new_rule(&self, spec: RuleSpec) -> Result<(), Error> {
        check_rule(spec, &self.active_specs(), &self.base)?;
        if self.was_removed(&RuleBody::Enforced { spec }) {
            return Err(Error::RuleWasRemoved);
        }
        Ok(())
    }

    pub(super) fn create_rule(
        &mut self,
        seat: Seat,
        spec: Option<RuleSpec>,
        text: Option<&Arc<str>>,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        if spec.is_none() && text.is_none() {
            return Err(Error::EmptyRule);
        }
        let enforced = match spec {
            Some(spec) => {
                self.check_new_rule(spec)?;
                Some(RuleBody::Enforced { spec })
            }
            None => None,
        };
        let table = match text {
            Some(text) => {
                check_table_text(text)?;
                let body = RuleBody::Table {
                    text: Arc::clone(text),
                };
                if self.was_removed(&body) {
                    return Err(Error::RuleWasRemoved);
                }
                Some(body)
            }
            None => None,
        };
        for body in [enforced, table].into_iter().flatten() {
            let rule = Rule {
                id: self.rules.len() as RuleId,
                creator: seat,
                won_in_hand: self.hand.checked_sub(1),
                body,
                status: RuleStatus::Active,
            };
            out.push_with(|| Observation::public(Event::RuleCreated { rule: rule.clone() }));
            self.rules.push(rule);
        }
        self.begin_hand(out);
        Ok(())
    }

    /// Every change a proposal may make now, whatever its timing (only a hand-size change
    /// depends on it, and it is checked for the stricter "now"), handed to `each` in a fixed
    /// order. Each rule's other active rules are gathered once, since the catalogue is checked
    /// against them many times.
    pub(super) fn candidate_changes(&self, mut each: impl FnMut(Change)) {
        for rule in &self.rules {
            if rule.status != RuleStatus::Active {
                let restore = Change::RestoreRule { rule: rule.id };
                if self.check_change(&restore, Timing::Now).is_ok() {
                    each(restore);
                }
                continue;
            }
            each(Change::RemoveRule { rule: rule.id });
            let others = self.active_specs_except(Some(rule.id));
            for &spec in catalogue() {
                let to = RuleBody::Enforced { spec };
                if to != rule.body && check_rule(spec, &others, &self.base).is_ok() {
                    each(Change::ModifyRule { rule: rule.id, to });
                }
            }
        }
        let sizes = HAND_SIZE_RANGE.map(|size| Change::SetHandSize { size });
        let specials = Special::ALL.into_iter().flat_map(|special| {
            std::iter::once(None)
                .chain(Rank::ALL.map(Some))
                .map(move |rank| Change::SetSpecial { special, rank })
        });
        for change in sizes.chain(specials) {
            if self.check_change(&change, Timing::Now).is_ok() {
                each(change);
            }
        }
    }

    /// The size of the next deck dealt: the fixed deck for the first hand, else 52.
    pub(super) fn deck_size(&self, timing: Timing) -> usize {
        match (&self.config.fixed_deck, self.hand, timing) {
            (Some(deck), 0, Timing::Now) => deck.len(),
            _ => 52,
        }
    }

    pub(super) fn check_change(&self, change: &Change, timing: Timing) -> Result<(), Error> {
        match change {
            Change::RemoveRule { rule } => {
                if self.rule(*rule)?.status != RuleStatus::Active {
                    return Err(Error::RuleNotActive(*rule));
                }
            }
            Change::ModifyRule { rule, to } => {
                let current = self.rule(*rule)?;
                if current.status != RuleStatus::Active {
                    return Err(Error::RuleNotActive(*rule));
                }
                if current.body == *to {
                    return Err(Error::NoChange);
                }
                match to {
                    RuleBody::Enforced { spec } => {
                        check_rule(*spec, &self.active_specs_except(Some(*rule)), &self.base)?
                    }
                    RuleBody::Table { text } => check_table_text(text)?,
                }
            }
            Change::RestoreRule { rule } => {
                let current = self.rule(*rule)?;
                if current.status == RuleStatus::Active {
                    return Err(Error::RuleIsActive(*rule));
                }
                if let RuleBody::Enforced { spec } = current.body {
                    check_rule(spec, &self.active_specs(), &self.base)?;
                }
            }
            Change::SetHandSize { size } => {
                if *size == self.base.hand_size {
                    return Err(Error::NoChange);
                }
                let per_seat = self.deck_size(timing) / usize::from(self.seat_count);
                let max =
                    (per_seat.saturating_sub(2 * TABLE_CARDS) as u8).min(*HAND_SIZE_RANGE.end());
                if *size < *HAND_SIZE_RANGE.start() || *size > max {
                    return Err(Error::HandSizeOutOfRange {
                        min: *HAND_SIZE_RANGE.start(),
                        max,
                    });
                }
            }
            Change::SetSpecial { special, rank } => {
                if self.base.special(*special) == *rank {
                    return Err(Error::NoChange);
                }
                if let Some(rank) = rank
                    && self.base.role_of(*rank).is_some_and(|r| r != *special)
                {
                    return Err(Error::RankAlreadySpecial { rank: *rank });
                }
            }
        }
        Ok(())
    }

    /// Applies a passed change, if it still applies.
    pub(super) fn apply_change(&mut self, change: &Change, out: &mut impl Record<Event>) {
        // Scheduled changes are checked again: a rule may have been cancelled meanwhile.
        if self.check_change(change, Timing::NextHand).is_err() {
            out.push_with(|| {
                Observation::public(Event::ChangeLapsed {
                    change: change.clone(),
                })
            });
            return;
        }
        match change {
            Change::RemoveRule { rule } => self.set_status(*rule, RuleStatus::Removed),
            Change::RestoreRule { rule } => self.set_status(*rule, RuleStatus::Active),
            Change::ModifyRule { rule, to } => {
                if let Some(r) = self.rules.iter_mut().find(|r| r.id == *rule) {
                    r.body = to.clone();
                }
            }
            Change::SetHandSize { size } => self.base.hand_size = *size,
            Change::SetSpecial { special, rank } => self.base.set_special(*special, *rank),
        }
        out.push_with(|| {
            Observation::public(Event::ChangeApplied {
                change: change.clone(),
            })
        });
    }

    pub(super) fn set_status(&mut self, id: RuleId, status: RuleStatus) {
        if let Some(r) = self.rules.iter_mut().find(|r| r.id == id) {
            r.status = status;
        }
    }

    // ---- hands, votes, Roshambo ----------------------------------------------------------

    /// Opens the current hand: scheduled changes take effect and the Rule Vote window opens.
    pub(super) fn begin_hand(&mut self, out: &mut impl Record<Event>) {
        for change in std::mem::take(&mut self.scheduled) {
            self.apply_change(&change, out);
        }
        self.vote_held = false;
        self.phase = Phase::Proposal {
            declined: SeatSet::EMPTY,
        };
        out.push(Observation::public(Event::HandStarted {
            hand: self.hand,
            dealer: self.dealer(),
            opener: self.opener(),
        }));
    }

    pub(super) fn propose(
        &mut self,
        seat: Seat,
        change: &Change,
        timing: Timing,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        self.check_change(change, timing)?;
        let proposal = Proposal {
            by: seat,
            change: change.clone(),
            timing,
        };
        out.push_with(|| {
            Observation::public(Event::Proposed {
                proposal: proposal.clone(),
            })
        });
        self.vote_held = true;
        self.phase = Phase::Voting {
            proposal,
            ballots: (0..self.seat_count).map(|_| None).collect(),
            opposed: FixedVec::new(),
        };
        Ok(())
    }

    pub(super) fn vote(&mut self, seat: Seat, ballot: Ballot, out: &mut impl Record<Event>) {
        let Phase::Voting {
            proposal,
            ballots,
            opposed,
        } = &mut self.phase
        else {
            return;
        };
        ballots[usize::from(seat)] = Some(ballot);
        if ballot == Ballot::No {
            opposed.push(seat);
        }
        out.push(Observation::public(Event::Voted { seat }));
        if ballots.iter().any(Option::is_none) {
            return;
        }
        let proposal = proposal.clone();
        let opposed = *opposed;
        let ballots = *ballots;
        let yes = ballots.iter().filter(|b| **b == Some(Ballot::Yes)).count() as u8;
        let n = self.seat_count;
        let result = if 2 * yes > n {
            VoteResult::Passed
        } else if 2 * yes == n {
            VoteResult::Tied
        } else {
            VoteResult::Failed
        };
        out.push_with(|| {
            Observation::public(Event::VoteCounted {
                ballots: ballots
                    .iter()
                    .map(|b| b.unwrap_or(Ballot::Abstain))
                    .collect(),
                yes,
                result,
            })
        });
        match result {
            VoteResult::Passed => self.enact(&proposal, out),
            VoteResult::Failed => {}
            VoteResult::Tied => match self.defender(&proposal, &opposed) {
                None => self.enact(&proposal, out),
                Some(defender) => {
                    let challenger = proposal.by;
                    out.push(Observation::public(Event::RoshamboStarted {
                        challenger: proposal.by,
                        defender,
                    }));
                    self.phase = Phase::Roshambo {
                        proposal,
                        sides: [challenger, defender],
                        throws: [None, None],
                        score: [0, 0],
                        decisive: 0,
                        rounds: 0,
                        last_reveal: None,
                    };
                    return;
                }
            },
        }
        self.deal(out);
    }

    /// Who defends the rule in a tied vote: the rule's creator (for a custom rule removed or
    /// modified, unless they proposed it), else the first seat that voted no; `None` when
    /// nobody will defend it, so the change passes.
    pub(super) fn defender(&self, proposal: &Proposal, opposed: &[Seat]) -> Option<Seat> {
        let creator = match &proposal.change {
            Change::RemoveRule { rule } | Change::ModifyRule { rule, .. } => {
                self.rule(*rule).ok().map(|r| r.creator)
            }
            _ => None,
        };
        creator
            .filter(|c| *c != proposal.by)
            .or_else(|| opposed.iter().copied().find(|s| *s != proposal.by))
    }

    pub(super) fn throw(&mut self, seat: Seat, throw: Throw, out: &mut impl Record<Event>) {
        let Phase::Roshambo {
            proposal,
            sides,
            throws,
            score,
            decisive,
            rounds,
            last_reveal,
        } = &mut self.phase
        else {
            return;
        };
        let side = if sides[0] == seat { 0 } else { 1 };
        throws[side] = Some(throw);
        out.push(Observation::public(Event::ThrowCommitted { seat }));
        let [Some(a), Some(b)] = *throws else {
            return;
        };
        *throws = [None, None];
        *rounds = rounds.wrapping_add(1);
        *last_reveal = Some([a, b]);
        if a.beats(b) {
            score[0] += 1;
            *decisive += 1;
        } else if b.beats(a) {
            score[1] += 1;
            *decisive += 1;
        }
        out.push(Observation::public(Event::ThrowsRevealed {
            challenger: a,
            defender: b,
            score: *score,
            decisive: *decisive,
        }));
        // Exactly 30 decisive throws; at 15–15 the next decisive throw wins.
        if *decisive < ROSHAMBO_THROWS || score[0] == score[1] {
            return;
        }
        let challenger_won = score[0] > score[1];
        let winner = if challenger_won { sides[0] } else { sides[1] };
        let proposal = proposal.clone();
        out.push(Observation::public(Event::RoshamboWon { seat: winner }));
        if challenger_won {
            self.enact(&proposal, out);
        }
        self.deal(out);
    }

    pub(super) fn enact(&mut self, proposal: &Proposal, out: &mut impl Record<Event>) {
        match proposal.timing {
            Timing::Now => self.apply_change(&proposal.change, out),
            Timing::NextHand => {
                out.push_with(|| {
                    Observation::public(Event::ChangeScheduled {
                        change: proposal.change.clone(),
                    })
                });
                self.scheduled.push(proposal.change.clone());
            }
        }
    }

    /// Deals the current hand and opens the swaps.
    pub(super) fn deal(&mut self, out: &mut impl Record<Event>) {
        let deck: Cards = match (&self.config.fixed_deck, self.hand) {
            (Some(fixed), 0) => fixed.iter().copied().collect(),
            _ => {
                let mut deck: Cards = Card::DECK.into_iter().collect();
                self.rng.shuffle(&mut deck);
                self.unused.clear();
                deck
            }
        };
        for p in &mut self.players {
            *p = Player::default();
        }
        self.pile.clear();
        self.pass_chain.clear();
        self.gone.clear();
        self.top_play_count = 0;
        self.obligation = false;
        self.reversed = false;
        self.skips = 0;
        self.turn = Turn::default();
        let hand_size = usize::from(self.base.hand_size);
        let mut cards = deck.iter().copied();
        for seat in 0..self.seat_count {
            let p = &mut self.players[usize::from(seat)];
            p.face_down = cards.by_ref().take(TABLE_CARDS).collect();
            p.face_up = cards.by_ref().take(TABLE_CARDS).collect();
            p.hand = cards.by_ref().take(hand_size).collect();
        }
        // The draw pile's top is its last card.
        self.draw = cards.rev().collect();
        for seat in 0..self.seat_count {
            let p = self.player(seat);
            let draw_pile = self.draw.len() as u8;
            out.push_with(|| {
                Observation::public(Event::Dealt {
                    seat,
                    face_up: p.face_up.to_vec(),
                    face_down: p.face_down.len() as u8,
                    in_hand: p.hand.len() as u8,
                    draw_pile,
                })
            });
            out.push_with(|| {
                Observation::to_seat(
                    seat,
                    Event::YourHand {
                        cards: p.hand.to_vec(),
                    },
                )
            });
        }
        self.phase = Phase::Swap {
            done: SeatSet::EMPTY,
        };
    }

    pub(super) fn swap(
        &mut self,
        seat: Seat,
        hand: Card,
        face_up: Card,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let p = self.player(seat);
        let h = p
            .hand
            .iter()
            .position(|c| *c == hand)
            .ok_or(Error::CardNotInHand(hand))?;
        let u = p
            .face_up
            .iter()
            .position(|c| *c == face_up)
            .ok_or(Error::CardNotFaceUp(face_up))?;
        let p = self.player_mut(seat);
        p.hand[h] = face_up;
        p.face_up[u] = hand;
        out.push(Observation::public(Event::Swapped {
            seat,
            to_hand: face_up,
            to_face_up: hand,
        }));
        self.swap_done(seat, out);
        Ok(())
    }

    pub(super) fn swap_done(&mut self, seat: Seat, out: &mut impl Record<Event>) {
        if let Phase::Swap { done } = &mut self.phase {
            done.insert(seat);
            if *done == SeatSet::first(self.seat_count) {
                self.phase = Phase::Play;
                self.start_turn(self.opener(), out);
            }
        }
    }
}

/// Checks a free-text table rule.
pub(super) fn check_table_text(text: &str) -> Result<(), Error> {
    let chars = text.chars().count();
    if text.trim().is_empty() || chars > TABLE_RULE_MAX_CHARS || text.chars().any(char::is_control)
    {
        return Err(Error::TableRuleText {
            max: TABLE_RULE_MAX_CHARS,
        });
    }
    Ok(())
}

/// Checks that `spec` may join the `others` active enforced rules under `base`.
pub(super) fn check_rule(
    spec: RuleSpec,
    others: &[RuleSpec],
    base: &BaseRules,
) -> Result<(), Error> {
    match spec.trigger {
        Trigger::CardsPlayed { at_least } if !(1..=4).contains(&at_least) => {
            return Err(Error::RuleOutOfRange {
                what: "cards-played at-least",
                min: 1,
                max: 4,
            });
        }
        _ => {}
    }
    if let Effect::PlayerDraws { count } = spec.effect
        && !(1..=3).contains(&count)
    {
        return Err(Error::RuleOutOfRange {
            what: "player-draws count",
            min: 1,
            max: 3,
        });
    }
    match (spec.trigger, spec.effect) {
        (Trigger::PilePickedUp, Effect::BurnPile | Effect::BonusPlay) => {
            return Err(Error::RuleContradictsBaseRule {
                reason: "a pickup ends the turn, so it can't give a burn or a bonus play",
            });
        }
        (Trigger::RankPlayed { rank }, Effect::BonusPlay) if base.pass == Some(rank) => {
            return Err(Error::RuleContradictsBaseRule {
                reason: "a pass hands the pickup to the next player; a bonus play would hand it back",
            });
        }
        _ => {}
    }
    if others.contains(&spec) {
        return Err(Error::RuleDuplicate);
    }
    // Walk the events this rule's effect raises, through every rule, until nothing new fires.
    // Inline lists: `legal_actions` checks the whole catalogue this way.
    let all = || others.iter().chain(std::iter::once(&spec));
    let mut frontier: SmallVec<[Trigger; 4]> = raised_by(spec.effect).into_iter().collect();
    let mut seen: SmallVec<[Trigger; 4]> = SmallVec::new();
    while let Some(trigger) = frontier.pop() {
        if trigger == spec.trigger {
            return Err(Error::RuleLoops);
        }
        if seen.contains(&trigger) {
            continue;
        }
        seen.push(trigger);
        for rule in all().filter(|r| r.trigger == trigger) {
            frontier.extend(raised_by(rule.effect));
        }
    }
    Ok(())
}
