//! A turn's card: whether a play or a Chancellor's choice is allowed, and what it does. Every
//! refusal comes before the first change to the state.

use super::*;

impl LoveLetter {
    /// Checks a `Play` against the rules; on success nothing has changed yet.
    pub(super) fn validate_play(
        &self,
        seat: Seat,
        card: CardId,
        target: Option<Seat>,
        guess: Option<Role>,
    ) -> Result<(), Error> {
        let hand = &self.players[seat as usize].hand;
        if !hand.contains(&card) {
            return Err(Error::CardNotInHand(card));
        }
        let role = card.role();
        if role != Role::Countess && Self::countess_forced(hand) {
            return Err(Error::CountessMustBePlayed);
        }
        if role != Role::Guard && guess.is_some() {
            return Err(Error::GuessNotAllowed);
        }
        match (targeting(role), target) {
            (Targeting::Nobody, None) => return Ok(()),
            (Targeting::Nobody, Some(_)) => return Err(Error::TargetNotAllowed),
            (Targeting::Other, None) => {
                if self.any_other_choosable(seat) {
                    return Err(Error::TargetRequired);
                }
                return if guess.is_some() {
                    Err(Error::GuessNotAllowed)
                } else {
                    Ok(())
                };
            }
            (Targeting::Anyone, None) => return Err(Error::TargetRequired),
            (kind, Some(t)) => {
                let Some(p) = self.players.get(t as usize) else {
                    return Err(Error::NoSuchSeat(t));
                };
                if t == seat && kind == Targeting::Other {
                    return Err(Error::CannotTargetSelf);
                }
                if p.out {
                    return Err(Error::TargetOut(t));
                }
                if p.protected && t != seat {
                    return Err(Error::TargetProtected(t));
                }
            }
        }
        if role == Role::Guard {
            match guess {
                None => return Err(Error::GuessRequired),
                Some(Role::Guard) => return Err(Error::GuessGuard),
                Some(g) if !self.edition.has_role(g) => return Err(Error::GuessNotInEdition(g)),
                Some(_) => {}
            }
        }
        Ok(())
    }

    pub(super) fn play<R: Record<Event>>(
        &mut self,
        seat: Seat,
        card: CardId,
        target: Option<Seat>,
        guess: Option<Role>,
        obs: &mut R,
    ) {
        let s = seat as usize;
        let player = &mut self.players[s];
        if let Some(i) = player.hand.iter().position(|c| *c == card) {
            player.hand.remove(i);
        }
        player.played.push(card);
        obs.push_with(|| {
            Observation::public(Event::Played {
                seat,
                card,
                target,
                guess,
            })
        });
        let role = card.role();
        if target.is_none() && targeting(role) != Targeting::Nobody {
            obs.push_with(|| Observation::public(Event::NoEffect { seat, card }));
            self.end_turn(obs);
            return;
        }
        match role {
            Role::Spy | Role::Countess => {}
            Role::Princess => self.eliminate(seat, obs),
            Role::Handmaid => self.players[s].protected = true,
            Role::Guard => {
                if let (Some(t), Some(g)) = (target, guess) {
                    let hit = self.players[t as usize]
                        .hand
                        .first()
                        .is_some_and(|c| c.role() == g);
                    obs.push_with(|| {
                        Observation::public(Event::GuardGuess {
                            seat,
                            target: t,
                            guess: g,
                            hit,
                        })
                    });
                    if hit {
                        self.eliminate(t, obs);
                    }
                }
            }
            Role::Priest => {
                if let Some(t) = target
                    && let Some(&seen) = self.players[t as usize].hand.first()
                {
                    obs.push_with(|| {
                        Observation::to_seat(
                            seat,
                            Event::PriestSaw {
                                seat,
                                target: t,
                                card: seen,
                            },
                        )
                    });
                }
            }
            Role::Baron => {
                if let Some(t) = target
                    && let (Some(&mine), Some(&theirs)) = (
                        self.players[s].hand.first(),
                        self.players[t as usize].hand.first(),
                    )
                {
                    let loser = match mine.value().cmp(&theirs.value()) {
                        std::cmp::Ordering::Less => Some(seat),
                        std::cmp::Ordering::Greater => Some(t),
                        std::cmp::Ordering::Equal => None,
                    };
                    let both: SeatSet = [seat, t].into_iter().collect();
                    obs.push_with(|| {
                        Observation::to_seats(
                            both,
                            Event::BaronCompared {
                                seat,
                                target: t,
                                seat_card: mine,
                                target_card: theirs,
                                loser,
                            },
                        )
                    });
                    if let Some(loser) = loser {
                        self.eliminate(loser, obs);
                    }
                }
            }
            Role::King => {
                if let Some(t) = target
                    && let (Some(&mine), Some(&theirs)) = (
                        self.players[s].hand.first(),
                        self.players[t as usize].hand.first(),
                    )
                {
                    self.players[s].hand[0] = theirs;
                    self.players[t as usize].hand[0] = mine;
                    let both: SeatSet = [seat, t].into_iter().collect();
                    obs.push_with(|| {
                        Observation::to_seats(
                            both,
                            Event::KingTraded {
                                seat,
                                target: t,
                                seat_gave: mine,
                                target_gave: theirs,
                            },
                        )
                    });
                }
            }
            Role::Prince => {
                if let Some(t) = target {
                    let victim = &mut self.players[t as usize];
                    let discarded = victim.hand;
                    victim.hand.clear();
                    victim.played.extend_from_slice(&discarded);
                    for &c in discarded.iter() {
                        obs.push_with(|| {
                            Observation::public(Event::PrinceDiscarded {
                                seat,
                                target: t,
                                card: c,
                            })
                        });
                    }
                    if discarded.iter().any(|c| c.role() == Role::Princess) {
                        // Out at once; the Princess does nothing more and no card is drawn.
                        victim.out = true;
                        victim.protected = false;
                        obs.push_with(|| {
                            Observation::public(Event::PlayerOut {
                                seat: t,
                                discarded: Vec::new(),
                            })
                        });
                    } else {
                        let (new, from_set_aside) = match self.deck.pop() {
                            Some(c) => (Some(c), false),
                            None => (self.set_aside.take(), true),
                        };
                        if let Some(c) = new {
                            self.players[t as usize].hand.push(c);
                            obs.push_with(|| {
                                Observation::to_seat(
                                    t,
                                    Event::PrinceDrew {
                                        target: t,
                                        card: c,
                                        from_set_aside,
                                    },
                                )
                            });
                        }
                    }
                }
            }
            Role::Chancellor => {
                let n = self.deck.len().min(2);
                if n == 0 {
                    obs.push_with(|| Observation::public(Event::NoEffect { seat, card }));
                } else {
                    // The top card first, then the one under it.
                    let mut drawn = Cards::<2>::new();
                    for _ in 0..n {
                        if let Some(c) = self.deck.pop() {
                            drawn.push(c);
                        }
                    }
                    self.players[s].hand.extend_from_slice(&drawn);
                    self.chancellor = n as u8;
                    obs.push_with(|| {
                        Observation::to_seat(
                            seat,
                            Event::ChancellorDrew {
                                seat,
                                cards: drawn.to_vec(),
                            },
                        )
                    });
                    // The turn goes on with the choice of what to keep.
                    return;
                }
            }
        }
        self.end_turn(obs);
    }

    pub(super) fn validate_keep(
        &self,
        seat: Seat,
        keep: CardId,
        bottom: &[CardId],
    ) -> Result<(), Error> {
        let hand = &self.players[seat as usize].hand;
        if !hand.contains(&keep) {
            return Err(Error::CardNotInHand(keep));
        }
        if bottom.len() + 1 != hand.len() {
            return Err(Error::BadChancellorChoice);
        }
        for (i, c) in bottom.iter().enumerate() {
            if !hand.contains(c) {
                return Err(Error::CardNotInHand(*c));
            }
            if *c == keep || bottom[..i].contains(c) {
                return Err(Error::BadChancellorChoice);
            }
        }
        Ok(())
    }

    pub(super) fn keep<R: Record<Event>>(
        &mut self,
        seat: Seat,
        keep: CardId,
        bottom: &[CardId],
        obs: &mut R,
    ) {
        let hand = &mut self.players[seat as usize].hand;
        hand.clear();
        hand.push(keep);
        // `bottom` ends with the very bottom card, and the bottom is the front of `deck`.
        for &c in bottom {
            self.deck.insert(0, c);
        }
        self.chancellor = 0;
        obs.push_with(|| {
            Observation::to_seat(
                seat,
                Event::ChancellorKept {
                    seat,
                    kept: keep,
                    bottom: bottom.to_vec(),
                },
            )
        });
        obs.push_with(|| {
            Observation::public(Event::ChancellorReturned {
                seat,
                count: bottom.len() as u8,
            })
        });
        self.end_turn(obs);
    }
}
