"""The worker side of the playground: warm models, the continuous-batching loop, frames. Imports torch."""
