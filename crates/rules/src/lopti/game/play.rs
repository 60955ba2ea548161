//! A hand's turns: plays from hand and face down, passes, burns, pickups, draws, the custom
//! rules a play sets off, and the end of the hand. Every refusal comes before the first change
//! to the state.

use super::*;

impl Lopti {
    pub(super) fn start_turn(&mut self, seat: Seat, out: &mut impl Record<Event>) {
        let number = self.turn.number.wrapping_add(1);
        self.turn = Turn {
            seat,
            plays_left: 1,
            played: false,
            number,
        };
        out.push(Observation::public(Event::TurnStarted { seat }));
    }

    pub(super) fn end_turn(&mut self, out: &mut impl Record<Event>) {
        let mut next = self.next_seat(self.turn.seat);
        while self.skips > 0 {
            self.skips -= 1;
            out.push(Observation::public(Event::TurnSkipped { seat: next }));
            next = self.next_seat(next);
        }
        self.start_turn(next, out);
    }

    /// Whether a play of `count` cards of `rank` is valid on the table now.
    pub(super) fn check_play(&self, rank: Rank, count: u8) -> Result<(), Error> {
        let base = &self.base;
        let is = |special: Option<Rank>| special == Some(rank);
        if self.obligation {
            return match base.pass {
                Some(pass) if pass == rank => Ok(()),
                Some(pass) => Err(Error::PassObligation { pass }),
                None => Ok(()),
            };
        }
        if is(base.pass) {
            return Ok(());
        }
        let Some(top) = self.pile.last().map(|c| c.rank()) else {
            return Ok(());
        };
        let run = self
            .pile
            .iter()
            .rev()
            .take_while(|c| c.rank() == top)
            .count();
        let equal_ok = count > self.top_play_count || run + usize::from(count) >= 4;
        let need_more = Error::NeedMoreCards {
            rank,
            count: self.top_play_count,
        };
        if base.low == Some(top) {
            if is(base.burn) {
                return Err(Error::BurnOnLow {
                    burn: rank,
                    low: top,
                });
            }
            if is(base.reset) && rank != top {
                return Ok(());
            }
            return match rank.cmp(&top) {
                std::cmp::Ordering::Greater => Err(Error::MustPlayLow { low: top }),
                std::cmp::Ordering::Equal if !equal_ok => Err(need_more),
                _ => Ok(()),
            };
        }
        if rank == top {
            return if equal_ok { Ok(()) } else { Err(need_more) };
        }
        if is(base.burn) || is(base.reset) || base.reset == Some(top) || rank > top {
            return Ok(());
        }
        Err(Error::TooLow { rank, top })
    }

    pub(super) fn play_from_hand(
        &mut self,
        seat: Seat,
        cards: &[Card],
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let Some(first) = cards.first() else {
            return Err(Error::EmptyPlay);
        };
        for (i, card) in cards.iter().enumerate() {
            if cards[..i].contains(card) {
                return Err(Error::DuplicateCard(*card));
            }
            if !self.player(seat).hand.contains(card) {
                return Err(Error::CardNotInHand(*card));
            }
            if card.rank() != first.rank() {
                return Err(Error::MixedRanks);
            }
        }
        self.check_play(first.rank(), cards.len() as u8)?;
        self.player_mut(seat).hand.retain(|c| !cards.contains(c));
        self.resolve_play(seat, cards, Source::Hand, out);
        Ok(())
    }

    pub(super) fn play_face_down(
        &mut self,
        seat: Seat,
        index: u8,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let p = self.player(seat);
        if !p.hand.is_empty() || !p.face_up.is_empty() {
            return Err(Error::FaceDownNotYet);
        }
        if usize::from(index) >= p.face_down.len() {
            return Err(Error::NoSuchFaceDown(index));
        }
        let card = self.player_mut(seat).face_down.remove(usize::from(index));
        if self.check_play(card.rank(), 1).is_ok() {
            self.resolve_play(seat, &[card], Source::FaceDown, out);
        } else {
            out.push(Observation::public(Event::FaceDownFailed { seat, card }));
            self.pile.push(card);
            self.pick_up(seat, out);
            self.end_turn(out);
        }
        Ok(())
    }

    /// Resolves a valid play: the base effect, then custom rules, the draw, face-up cards, and
    /// the end of the turn once no play is left.
    pub(super) fn resolve_play(
        &mut self,
        seat: Seat,
        cards: &[Card],
        source: Source,
        out: &mut impl Record<Event>,
    ) {
        let rank = cards[0].rank();
        let count = cards.len() as u8;
        let bonus = self.turn.played;
        self.turn.plays_left = self.turn.plays_left.saturating_sub(1);
        out.push_with(|| {
            Observation::public(Event::Played {
                seat,
                cards: cards.to_vec(),
                source,
                bonus,
            })
        });
        let mut happened = Happenings::one(Happened::Played { rank, count });
        let burned = if self.base.pass == Some(rank) {
            self.pass_chain.extend_from_slice(cards);
            if self.pass_chain.len() >= 4 {
                Some(BurnCause::FourPasses)
            } else {
                // A pass on an empty table makes no pickup: the next player opens as normal.
                self.obligation = !self.pile.is_empty();
                None
            }
        } else {
            self.gone.append(&mut self.pass_chain);
            if self.base.burn == Some(rank) {
                self.gone.extend_from_slice(cards);
                Some(BurnCause::BurnRank)
            } else {
                self.pile.extend_from_slice(cards);
                self.top_play_count = count;
                let run = self
                    .pile
                    .iter()
                    .rev()
                    .take_while(|c| c.rank() == rank)
                    .count();
                (run >= 4).then_some(BurnCause::FourOfARank)
            }
        };
        // Out the moment the last card leaves: normally the last face-down card, or the last
        // card in hand when a failed blind card was the last face-down one.
        let p = self.player(seat);
        let won = p.hand.is_empty() && p.face_up.is_empty() && p.face_down.is_empty();
        if let Some(cause) = burned {
            // A player who just went out gets no bonus play.
            self.burn(seat, cause, !won, out);
            happened.push_back(Happened::Burned);
        }
        if won {
            self.finish_hand(seat, out);
            return;
        }
        self.fire(seat, happened, out);
        if self.obligation {
            let next = self.peek_next();
            out.push(Observation::public(Event::MustPickUpOrPass { seat: next }));
        }
        if !self.turn.played {
            self.turn.played = true;
            if self.player(seat).hand.len() < usize::from(self.base.hand_size) {
                self.draw_cards(seat, 1, out);
            }
        }
        self.take_face_up_if_due(seat, out);
        if self.turn.plays_left == 0 {
            self.end_turn(out);
        }
    }

    /// The seat that will play next, counting pending skips.
    pub(super) fn peek_next(&self) -> Seat {
        let mut next = self.next_seat(self.turn.seat);
        for _ in 0..self.skips {
            next = self.next_seat(next);
        }
        next
    }

    pub(super) fn burn(
        &mut self,
        seat: Seat,
        cause: BurnCause,
        bonus: bool,
        out: &mut impl Record<Event>,
    ) {
        // The burn rank itself already went to `gone`; report it with the burned cards.
        out.push_with(|| {
            Observation::public(Event::Burned {
                seat,
                cause,
                cards: [&self.pile[..], &self.pass_chain[..]].concat(),
            })
        });
        self.gone.append(&mut self.pile);
        self.gone.append(&mut self.pass_chain);
        self.obligation = false;
        self.top_play_count = 0;
        if bonus {
            self.turn.plays_left = self.turn.plays_left.saturating_add(1);
            out.push(Observation::public(Event::BonusPlayGranted { seat }));
        }
    }

    pub(super) fn pick_up(&mut self, seat: Seat, out: &mut impl Record<Event>) {
        let cards = self.pile;
        self.pile.clear();
        self.gone.append(&mut self.pass_chain);
        self.obligation = false;
        self.top_play_count = 0;
        self.player_mut(seat).hand.extend_from_slice(&cards);
        out.push_with(|| {
            Observation::public(Event::PickedUp {
                seat,
                cards: cards.to_vec(),
            })
        });
        self.fire(seat, Happenings::one(Happened::PickedUp), out);
        // A pickup ends the turn whatever a rule granted.
        self.turn.plays_left = 0;
    }

    pub(super) fn draw_cards(&mut self, seat: Seat, count: u8, out: &mut impl Record<Event>) {
        let mut drawn = Cards::new();
        for _ in 0..count {
            match self.draw.pop() {
                Some(card) => drawn.push(card),
                None => break,
            }
        }
        if drawn.is_empty() {
            return;
        }
        out.push(Observation::public(Event::Drew {
            seat,
            count: drawn.len() as u8,
        }));
        self.player_mut(seat).hand.extend_from_slice(&drawn);
        out.push_with(|| {
            Observation::to_seat(
                seat,
                Event::YouDrew {
                    cards: drawn.to_vec(),
                },
            )
        });
    }

    pub(super) fn take_face_up_if_due(&mut self, seat: Seat, out: &mut impl Record<Event>) {
        let p = self.player_mut(seat);
        if !p.hand.is_empty() || p.face_up.is_empty() {
            return;
        }
        let cards = p.face_up;
        p.face_up.clear();
        p.hand.extend_from_slice(&cards);
        out.push_with(|| {
            Observation::public(Event::FaceUpTaken {
                seat,
                cards: cards.to_vec(),
            })
        });
        self.fire(seat, Happenings::one(Happened::FaceUpTaken), out);
    }

    /// Runs the custom rules that `happened` sets off, in rule order, and whatever their
    /// effects set off in turn.
    pub(super) fn fire(&mut self, seat: Seat, mut queue: Happenings, out: &mut impl Record<Event>) {
        let mut budget = EFFECT_BUDGET;
        while let Some(event) = queue.pop_front() {
            // No effect changes the rules, so they are read in place, by index, while the
            // effects change the rest of the state.
            for i in 0..self.rules.len() {
                let (rule, effect) = match &self.rules[i] {
                    Rule {
                        id,
                        status: RuleStatus::Active,
                        body: RuleBody::Enforced { spec },
                        ..
                    } if event.sets_off(spec.trigger) => (*id, spec.effect),
                    _ => continue,
                };
                if budget == 0 {
                    return;
                }
                budget -= 1;
                out.push(Observation::public(Event::RuleFired { rule, seat }));
                match effect {
                    Effect::NextPlayerSkips => self.skips = self.skips.saturating_add(1),
                    Effect::ReverseDirection => {
                        self.reversed = !self.reversed;
                        out.push(Observation::public(Event::DirectionReversed));
                    }
                    Effect::PlayerDraws { count } => self.draw_cards(seat, count, out),
                    Effect::OthersDrawOne => {
                        let mut other = self.next_seat(seat);
                        while other != seat {
                            self.draw_cards(other, 1, out);
                            other = self.next_seat(other);
                        }
                    }
                    Effect::BurnPile => {
                        if !self.pile.is_empty() {
                            self.burn(seat, BurnCause::CustomRule, true, out);
                            queue.push_back(Happened::Burned);
                        }
                    }
                    Effect::BonusPlay => {
                        if self.obligation {
                            out.push(Observation::public(Event::BonusPlayDropped { seat, rule }));
                        } else {
                            self.turn.plays_left = self.turn.plays_left.saturating_add(1);
                            out.push(Observation::public(Event::BonusPlayGranted { seat }));
                        }
                    }
                }
            }
        }
    }

    pub(super) fn finish_hand(&mut self, winner: Seat, out: &mut impl Record<Event>) {
        self.hands_won[usize::from(winner)] += 1;
        self.last_winner = Some(winner);
        out.push(Observation::public(Event::HandWon {
            seat: winner,
            hand: self.hand,
        }));
        self.hand += 1;
        if self.hand >= self.config.hands {
            self.phase = Phase::Over;
            let winners = self.winners();
            out.push_with(|| {
                Observation::public(Event::MatchOver {
                    hands_won: self.hands_won.clone(),
                    winners,
                })
            });
        } else {
            self.phase = Phase::RuleCreation { winner };
        }
    }
}
