"""Project alpha: greetings."""
