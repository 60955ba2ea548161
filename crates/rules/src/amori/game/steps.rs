//! The steps of a turn: the visit, the location's action, intrigues and their dice, the
//! gentleman decks, and event cards with their reactions. Each arm of `act` finishes its
//! checks before it changes anything.

use super::*;

impl Amori {
    pub(super) fn act(
        &mut self,
        seat: Seat,
        action: &Action,
        obs: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        match (self.phase.clone(), action) {
            (Phase::Visit, Action::Visit { location }) => {
                if self.player(seat).location == Some(*location) {
                    return Err(Error::MustMove);
                }
                self.player_mut(seat).location = Some(*location);
                obs.push_with(|| {
                    Observation::public(Event::Visited {
                        seat,
                        location: *location,
                    })
                });
                self.phase = Phase::ActionOrIntrigue {
                    location: *location,
                };
                Ok(())
            }
            (Phase::Visit, Action::Intrigue { target }) => {
                let here = self.player(seat).location.ok_or(Error::NoIntrigue)?;
                self.intrigue(seat, *target, here, obs)
            }
            (Phase::ActionOrIntrigue { location }, Action::Intrigue { target }) => {
                self.intrigue(seat, *target, location, obs)
            }
            (Phase::ActionOrIntrigue { location }, Action::LocationAction { choice }) => {
                self.location_action(seat, location, *choice, obs)
            }
            (Phase::ChooseGentleman { location, .. }, Action::Take { card }) => {
                let deck = &mut self.location_decks[location.index()];
                let at = deck
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotOffered)?;
                deck.remove(at);
                obs.push_with(|| {
                    Observation::public(Event::TookFromLocation {
                        seat,
                        location,
                        card: *card,
                    })
                });
                if let Some(top) = self.draw_main(obs) {
                    self.location_decks[location.index()].push(top);
                    obs.push_with(|| Observation::public(Event::LocationDeckRefilled { location }));
                }
                self.card_joins(seat, *card, obs);
                Ok(())
            }
            (Phase::IntrigueSpoils { taker, victim }, Action::Take { card }) => {
                let from = self
                    .player_mut(victim)
                    .active
                    .as_mut()
                    .ok_or(Error::CardNotOffered)?;
                let at = from
                    .suitors
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotOffered)?;
                from.suitors.remove(at);
                obs.push_with(|| {
                    Observation::public(Event::TookFromRival {
                        seat: taker,
                        from: victim,
                        card: *card,
                    })
                });
                self.card_joins(taker, *card, obs);
                Ok(())
            }
            (Phase::SuitorLimit { seat, incoming }, Action::GiveUp { gentleman }) => {
                if !self.suitor_gentlemen(seat).contains(gentleman) {
                    return Err(Error::NotASuitor);
                }
                let given = self
                    .player_mut(seat)
                    .active
                    .as_mut()
                    .ok_or(Error::NoDaughter)?
                    .part_with(*gentleman);
                obs.push_with(|| {
                    Observation::public(Event::GaveUp {
                        seat,
                        gentleman: *gentleman,
                        cards: given.to_vec(),
                    })
                });
                self.gentleman_discard.extend_from_slice(&given);
                self.card_joins(seat, incoming, obs);
                Ok(())
            }
            (
                Phase::Reaction {
                    target,
                    card: hostile,
                    ..
                },
                Action::React { card },
            ) => {
                let hand = &mut self.players[usize::from(target)].hand;
                let at = hand
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotInHand)?;
                if !card.kind().data().effect.is_reaction() {
                    return Err(Error::NotAReaction);
                }
                hand.remove(at);
                self.event_discard.push(hostile);
                self.event_discard.push(*card);
                obs.push_with(|| {
                    Observation::public(Event::Reacted {
                        seat: target,
                        card: *card,
                    })
                });
                self.settle(obs);
                Ok(())
            }
            (
                Phase::Reaction {
                    attacker,
                    target,
                    card,
                },
                Action::Pass,
            ) => {
                obs.push_with(|| Observation::public(Event::Passed { seat: target }));
                self.event_discard.push(card);
                self.resolve_hostile(attacker, target, card, obs);
                Ok(())
            }
            (Phase::Events, Action::EndTurn) => {
                self.end_turn(obs);
                Ok(())
            }
            (
                Phase::Visit | Phase::ActionOrIntrigue { .. } | Phase::Events,
                Action::PlayEvent {
                    card,
                    target,
                    location,
                },
            ) => self.play_event(seat, *card, *target, *location, obs),
            (Phase::Discard { seat }, Action::Discard { card }) => {
                let hand = &mut self.players[usize::from(seat)].hand;
                let at = hand
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotInHand)?;
                hand.remove(at);
                self.event_discard.push(*card);
                obs.push_with(|| Observation::public(Event::EventDiscarded { seat, card: *card }));
                if self.player(seat).hand.len() <= HAND_LIMIT {
                    self.next_turn(obs);
                }
                Ok(())
            }
            _ => Err(Error::WrongPhase),
        }
    }

    pub(super) fn resume_step(&self) -> Resume {
        match self.phase {
            Phase::ActionOrIntrigue { location } => Resume::ActionOrIntrigue(location),
            Phase::Events => Resume::Events,
            _ => Resume::Visit,
        }
    }

    /// A nested decision is settled: end the turn if a marriage happened, else go back to the
    /// step the current player was in.
    pub(super) fn settle(&mut self, obs: &mut impl Record<Event>) {
        if self.married_this_turn {
            self.end_turn(obs);
        } else {
            self.phase = self.resume.phase();
        }
    }

    pub(super) fn intrigue(
        &mut self,
        seat: Seat,
        target: Seat,
        at: Location,
        obs: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        if target >= self.seats || target == seat {
            return Err(Error::InvalidTarget);
        }
        if !self.intrigue_targets(seat, at).contains(target) {
            return Err(Error::NoIntrigue);
        }
        obs.push_with(|| Observation::public(Event::Intrigued { seat, target }));
        self.resume = Resume::Events;
        self.roll_intrigue(seat, target, obs);
        Ok(())
    }

    /// Roll the Intrigue die: the winner of the roll picks a card from the other daughter.
    pub(super) fn roll_intrigue(&mut self, seat: Seat, target: Seat, obs: &mut impl Record<Event>) {
        let face = self.roll(seat, Die::Intrigue, obs);
        self.phase = if face == DieFace::Clover {
            Phase::IntrigueSpoils {
                taker: seat,
                victim: target,
            }
        } else {
            Phase::IntrigueSpoils {
                taker: target,
                victim: seat,
            }
        };
    }

    pub(super) fn roll(&mut self, seat: Seat, die: Die, obs: &mut impl Record<Event>) -> DieFace {
        let faces = die.faces();
        let face = faces[self.rng.below(faces.len() as u32) as usize];
        obs.push_with(|| Observation::public(Event::Rolled { seat, die, face }));
        face
    }

    /// Roll Casanova or Drink for `seat`'s daughter and apply the face.
    pub(super) fn roll_for(&mut self, seat: Seat, die: Die, obs: &mut impl Record<Event>) {
        let face = self.roll(seat, die, obs);
        let Some(beauty) = self
            .player(seat)
            .active
            .as_ref()
            .map(|d| d.attributes.beauty)
        else {
            return;
        };
        match (die, face) {
            (Die::Casanova, face) if face.hat_beauty().is_some_and(|needed| beauty >= needed) => {
                self.adjust(seat, Attribute::Reputation, -(CASANOVA_LOSS as i8), obs);
            }
            (Die::Drink, DieFace::Bottle) => {
                self.adjust(seat, Attribute::Education, -(DRINK_LOSS as i8), obs);
            }
            _ => {}
        }
    }

    pub(super) fn adjust(
        &mut self,
        seat: Seat,
        attribute: Attribute,
        delta: i8,
        obs: &mut impl Record<Event>,
    ) {
        if let Some(d) = self.player_mut(seat).active.as_mut() {
            d.attributes.adjust(attribute, delta);
            let value = d.attributes.get(attribute);
            obs.push_with(|| {
                Observation::public(Event::AttributeChanged {
                    seat,
                    attribute,
                    value,
                })
            });
        }
        self.check_marriages(obs);
    }

    pub(super) fn location_action(
        &mut self,
        seat: Seat,
        location: Location,
        choice: Option<Attribute>,
        obs: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let options = choice_options(location);
        match choice {
            None if !options.is_empty() => return Err(Error::InvalidChoice),
            Some(c) if !options.contains(&c) => return Err(Error::InvalidChoice),
            _ => {}
        }
        self.resume = Resume::Events;
        for step in location.data().steps {
            match *step {
                LocationStep::Gain(attribute, n) => self.adjust(seat, attribute, n as i8, obs),
                LocationStep::GainOneOf(_, n) => {
                    if let Some(attribute) = choice {
                        self.adjust(seat, attribute, n as i8, obs);
                    }
                }
                LocationStep::Roll(die) => self.roll_for(seat, die, obs),
            }
            if self.married_this_turn {
                // A marriage ends the turn at once: the rest of the action is forgone.
                self.end_turn(obs);
                return Ok(());
            }
        }
        self.offer_location_deck(seat, location, obs);
        Ok(())
    }

    /// Reveal `location`'s deck to `seat` and ask for a card, or go on if there is none.
    pub(super) fn offer_location_deck(
        &mut self,
        seat: Seat,
        location: Location,
        obs: &mut impl Record<Event>,
    ) {
        self.reveal(location, obs);
        let deck = &self.location_decks[location.index()];
        if deck.is_empty() {
            self.settle(obs);
        } else {
            obs.push_with(|| {
                Observation::to_seat(
                    seat,
                    Event::DeckShown {
                        location,
                        cards: sorted(deck),
                    },
                )
            });
            self.phase = Phase::ChooseGentleman { seat, location };
        }
    }

    /// Cards of married gentlemen found in a revealed deck leave the game and are replaced.
    pub(super) fn reveal(&mut self, location: Location, obs: &mut impl Record<Event>) {
        loop {
            let deck = &self.location_decks[location.index()];
            let stale: Deck = deck
                .iter()
                .copied()
                .filter(|c| self.is_married(c.gentleman()))
                .collect();
            if stale.is_empty() {
                return;
            }
            self.location_decks[location.index()].retain(|c| !stale.contains(c));
            obs.push_with(|| {
                Observation::public(Event::GentlemenRetired {
                    cards: stale.to_vec(),
                })
            });
            self.retired.extend_from_slice(&stale);
            for _ in 0..stale.len() {
                if let Some(card) = self.draw_main(obs) {
                    self.location_decks[location.index()].push(card);
                    obs.push_with(|| Observation::public(Event::LocationDeckRefilled { location }));
                }
            }
        }
    }

    /// The top card of the main deck, reshuffling the discards when it is empty and setting
    /// aside cards of married gentlemen. `None` when no card is left anywhere.
    pub(super) fn draw_main(&mut self, obs: &mut impl Record<Event>) -> Option<CardId> {
        loop {
            if self.main_deck.is_empty() {
                if self.gentleman_discard.is_empty() {
                    return None;
                }
                self.main_deck = std::mem::take(&mut self.gentleman_discard);
                self.rng.shuffle(&mut self.main_deck);
                obs.push_with(|| {
                    Observation::public(Event::MainDeckReshuffled {
                        size: self.main_deck.len(),
                    })
                });
            }
            let card = self.main_deck.pop()?;
            if self.is_married(card.gentleman()) {
                self.retired.push(card);
                obs.push_with(|| {
                    Observation::public(Event::GentlemenRetired { cards: vec![card] })
                });
                continue;
            }
            return Some(card);
        }
    }

    /// `card` comes to `seat`'s daughter: through the suitor limit if it is a fourth
    /// gentleman, then marriages are checked and the current step resumes.
    pub(super) fn card_joins(&mut self, seat: Seat, card: CardId, obs: &mut impl Record<Event>) {
        let suitors = self.suitor_gentlemen(seat);
        let Some(daughter) = self.player_mut(seat).active.as_mut() else {
            // Nobody to receive it (every daughter married): it is discarded.
            self.gentleman_discard.push(card);
            obs.push_with(|| Observation::public(Event::GentlemenDiscarded { cards: vec![card] }));
            self.settle(obs);
            return;
        };
        if suitors.len() >= MAX_SUITORS && !suitors.contains(&card.gentleman()) {
            self.phase = Phase::SuitorLimit {
                seat,
                incoming: card,
            };
            return;
        }
        daughter.suitors.push(card);
        obs.push_with(|| Observation::public(Event::SuitorJoined { seat, card }));
        self.check_marriages(obs);
        self.settle(obs);
    }

    pub(super) fn play_event(
        &mut self,
        seat: Seat,
        card: EventCardId,
        target: Option<Seat>,
        location: Option<Location>,
        obs: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        let at = self
            .player(seat)
            .hand
            .iter()
            .position(|&c| c == card)
            .ok_or(Error::CardNotInHand)?;
        if self.player(seat).active.is_none() {
            return Err(Error::NoDaughter);
        }
        let effect = card.kind().data().effect;
        // Check the card's arguments before anything moves.
        let needs_target = effect.is_hostile();
        let needs_location = effect == EventEffect::BallInvitation;
        if target.is_some() != needs_target {
            return Err(Error::InvalidTarget);
        }
        if location.is_some() != needs_location {
            return Err(Error::InvalidChoice);
        }
        match effect {
            EventEffect::Chaperone => return Err(Error::ReactionOnly),
            EventEffect::LoveLetter if !self.main_deck_may_yield() => {
                return Err(Error::NothingToTake);
            }
            EventEffect::BallInvitation => {
                let l = location.ok_or(Error::InvalidChoice)?;
                if self.location_decks[l.index()].is_empty() {
                    return Err(Error::NothingToTake);
                }
            }
            EventEffect::Lower(..) | EventEffect::RollAgainst(_) => {
                let t = target.ok_or(Error::InvalidTarget)?;
                if t == seat || t >= self.seats || self.player(t).active.is_none() {
                    return Err(Error::InvalidTarget);
                }
            }
            EventEffect::IntrigueByLetter => {
                let t = target.ok_or(Error::InvalidTarget)?;
                if t == seat || t >= self.seats || self.player(t).active.is_none() {
                    return Err(Error::InvalidTarget);
                }
                if !self.letter_target_ok(seat, t) {
                    return Err(Error::NoIntrigue);
                }
            }
            _ => {}
        }
        self.player_mut(seat).hand.remove(at);
        obs.push_with(|| {
            Observation::public(Event::EventPlayed {
                seat,
                card,
                target,
                location,
            })
        });
        self.resume = self.resume_step();
        match effect {
            EventEffect::Raise(attribute, n) => {
                self.event_discard.push(card);
                self.adjust(seat, attribute, n as i8, obs);
                if self.married_this_turn {
                    self.end_turn(obs);
                }
            }
            EventEffect::KeepForPoints(_) => self.player_mut(seat).kept.push(card),
            EventEffect::LoveLetter => {
                self.event_discard.push(card);
                match self.draw_main(obs) {
                    Some(drawn) => {
                        obs.push_with(|| {
                            Observation::public(Event::DrewFromMainDeck { seat, card: drawn })
                        });
                        self.card_joins(seat, drawn, obs);
                    }
                    None => self.settle(obs),
                }
            }
            EventEffect::BallInvitation => {
                self.event_discard.push(card);
                if let Some(l) = location {
                    self.offer_location_deck(seat, l, obs);
                }
            }
            _ => {
                if let Some(t) = target {
                    // The card waits in the reaction window; it reaches the discard once settled.
                    self.phase = Phase::Reaction {
                        attacker: seat,
                        target: t,
                        card,
                    };
                }
            }
        }
        Ok(())
    }

    pub(super) fn resolve_hostile(
        &mut self,
        attacker: Seat,
        target: Seat,
        card: EventCardId,
        obs: &mut impl Record<Event>,
    ) {
        match card.kind().data().effect {
            EventEffect::Lower(attribute, n) => {
                self.adjust(target, attribute, -(n as i8), obs);
                self.settle(obs);
            }
            EventEffect::RollAgainst(die) => {
                self.roll_for(target, die, obs);
                self.settle(obs);
            }
            EventEffect::IntrigueByLetter => self.roll_intrigue(attacker, target, obs),
            _ => self.settle(obs),
        }
    }
}
