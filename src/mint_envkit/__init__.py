"""mint_envkit."""
