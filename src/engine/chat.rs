//! A conversation held for a chat: the system prompt and the turns so far, rendered through the
//! model's chat template into the prompt of the next reply. Oldest exchanges are dropped when the
//! conversation outgrows the context (the system prompt and the newest message stay).
use crate::error::{Error, Result};
use crate::model::tokenizer::{ChatMessage, ChatOptions, Tokenizer};

#[derive(Clone, Debug, Default)]
pub struct Conversation {
    system: Option<String>,
    turns: Vec<ChatMessage>,
}

impl Conversation {
    pub fn new(system: Option<&str>) -> Conversation {
        Conversation {
            system: system.map(String::from),
            turns: Vec::new(),
        }
    }

    /// Forgets every turn; the system prompt stays.
    pub fn reset(&mut self) {
        self.turns.clear();
    }

    pub fn push(&mut self, role: &str, content: &str) {
        self.turns.push(ChatMessage::new(role, content));
    }

    /// Removes the newest turn (an answer that was never given, say).
    pub fn pop(&mut self) -> Option<ChatMessage> {
        self.turns.pop()
    }

    pub fn turns(&self) -> &[ChatMessage] {
        &self.turns
    }

    /// The system prompt (when there is one) and every turn.
    pub fn messages(&self) -> Vec<ChatMessage> {
        let sys = self.system.iter().map(|s| ChatMessage::new("system", s));
        sys.chain(self.turns.iter().cloned()).collect()
    }

    /// The prompt ids of the next reply, at most `max_len` tokens: while the rendered conversation is
    /// longer, the oldest exchange (a user message and the answer after it) is dropped. Returns the
    /// ids and how many messages were dropped; an error when the newest message alone does not fit.
    pub fn prompt_ids(&mut self, tok: &Tokenizer, max_len: usize) -> Result<(Vec<u32>, usize)> {
        let opts = ChatOptions {
            add_generation_prompt: true,
            ..ChatOptions::default()
        };
        let mut dropped = 0;
        loop {
            let text = tok.apply_chat_template(&self.messages(), &opts)?;
            // a rendering surely too long is not tokenized in full (Tokenizer::surely_longer_than)
            let ids = match tok.surely_longer_than(&text, max_len) {
                true => None,
                false => Some(tok.encode_prompt(&text)?),
            };
            match &ids {
                Some(ids) if ids.len() <= max_len => return Ok((ids.clone(), dropped)),
                _ => {}
            }
            if self.turns.len() <= 1 {
                let takes = match ids {
                    Some(ids) => format!("{} tokens", ids.len()),
                    None => format!("more tokens than that ({} bytes)", text.len()),
                };
                return Err(Error::Other(format!(
                    "the message takes {takes} with the chat template and the context leaves room for {max_len}; \
                     raise --ctx or shorten it"
                )));
            }
            // Drop through the next user message, so the conversation still starts with a user turn.
            let next_user = self.turns[1..]
                .iter()
                .position(|m| m.role == "user")
                .map_or(1, |i| i + 1);
            let next_user = next_user.min(self.turns.len() - 1);
            self.turns.drain(..next_user);
            dropped += next_user;
        }
    }
}
