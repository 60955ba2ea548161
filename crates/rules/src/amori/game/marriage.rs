//! Marriages, checked after every change, and the ends of turns, of the final round and of
//! the match.

use super::*;

impl Amori {
    /// Marry every daughter who qualifies, for every seat. A daughter qualifying for several
    /// gentlemen at once marries the one worth the most VP (the first in the table on a tie).
    pub(super) fn check_marriages(&mut self, obs: &mut impl Record<Event>) {
        for seat in 0..self.seats {
            let Some(d) = &self.player(seat).active else {
                continue;
            };
            let mut best: Option<GentlemanId> = None;
            for &gentleman in self.suitor_gentlemen(seat).iter() {
                let count = d
                    .suitors
                    .iter()
                    .filter(|c| c.gentleman() == gentleman)
                    .count();
                if count >= CARDS_TO_MARRY
                    && d.attributes.meets(&gentleman.data().minimums)
                    && !self.is_married(gentleman)
                    && best.is_none_or(|b| {
                        gentleman.data().victory_points > b.data().victory_points
                            || (gentleman.data().victory_points == b.data().victory_points
                                && gentleman < b)
                    })
                {
                    best = Some(gentleman);
                }
            }
            if let Some(gentleman) = best {
                self.marry(seat, gentleman, obs);
            }
        }
    }

    pub(super) fn marry(&mut self, seat: Seat, husband: GentlemanId, obs: &mut impl Record<Event>) {
        let player = self.player_mut(seat);
        let Some(mut bride) = player.active.take() else {
            return;
        };
        let his = bride.part_with(husband);
        let kept = his[0];
        player.brides.push(Bride {
            daughter: bride.daughter,
            attributes: bride.attributes,
            husband,
            kept,
        });
        obs.push_with(|| {
            Observation::public(Event::Married {
                seat,
                daughter: bride.daughter,
                gentleman: husband,
                kept,
            })
        });
        // His other cards leave the game, wherever they lie face up.
        let mut retired = HisCards::new();
        retired.extend_from_slice(&his[1..]);
        for p in self.players.iter_mut() {
            if let Some(d) = p.active.as_mut() {
                retired.extend_from_slice(&d.part_with(husband));
            }
        }
        retired.extend_from_slice(&take_his(&mut self.gentleman_discard, husband));
        if !retired.is_empty() {
            obs.push_with(|| {
                Observation::public(Event::GentlemenRetired {
                    cards: retired.to_vec(),
                })
            });
            self.retired.extend_from_slice(&retired);
        }
        // Her other suitors are discarded.
        let others = bride.suitors;
        if !others.is_empty() {
            obs.push_with(|| {
                Observation::public(Event::GentlemenDiscarded {
                    cards: others.to_vec(),
                })
            });
            self.gentleman_discard.extend_from_slice(&others);
        }
        let player = self.player_mut(seat);
        if player.face_down.is_empty() {
            obs.push_with(|| Observation::public(Event::FinalRound { seat }));
            self.final_round = true;
        } else {
            let next = Daughter::revealed(player.face_down.remove(0));
            player.active = Some(next);
            obs.push_with(|| {
                Observation::public(Event::DaughterRevealed {
                    seat,
                    daughter: next.daughter,
                    attributes: next.attributes,
                })
            });
        }
        self.married_this_turn = true;
    }

    /// The current player draws an event card, which ends the turn (after a discard if over
    /// the hand limit).
    pub(super) fn end_turn(&mut self, obs: &mut impl Record<Event>) {
        let seat = self.current;
        if self.event_deck.is_empty() && !self.event_discard.is_empty() {
            self.event_deck = std::mem::take(&mut self.event_discard);
            self.rng.shuffle(&mut self.event_deck);
            obs.push_with(|| {
                Observation::public(Event::EventDeckReshuffled {
                    size: self.event_deck.len(),
                })
            });
        }
        if let Some(card) = self.event_deck.pop() {
            self.player_mut(seat).hand.push(card);
            obs.push_with(|| Observation::to_seat(seat, Event::EventDrawn { seat, card }));
            obs.push_with(|| Observation {
                audience: Audience::Everyone,
                event: Event::EventDrawnFaceDown { seat },
            });
        }
        if self.player(seat).hand.len() > HAND_LIMIT {
            self.phase = Phase::Discard { seat };
        } else {
            self.next_turn(obs);
        }
    }

    /// Pass the turn clockwise, skipping players with no daughter in play; after the final
    /// round (back at the starting player) the match is over.
    pub(super) fn next_turn(&mut self, obs: &mut impl Record<Event>) {
        self.married_this_turn = false;
        self.resume = Resume::Visit;
        for _ in 0..self.seats {
            self.current = (self.current + 1) % self.seats;
            if self.current == self.starting_player && self.final_round {
                break;
            }
            if self.player(self.current).active.is_some() {
                self.turn += 1;
                self.phase = Phase::Visit;
                obs.push_with(|| {
                    Observation::public(Event::TurnStarted {
                        seat: self.current,
                        turn: self.turn,
                    })
                });
                return;
            }
        }
        self.phase = Phase::Over;
        obs.push_with(|| {
            Observation::public(Event::GameOver {
                scoring: self.scoring(),
            })
        });
    }
}
