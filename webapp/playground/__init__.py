"""The decoding playground: a student types a sentence and watches the encoder-decoder think, token by token."""
