"""Project beta: counting."""
