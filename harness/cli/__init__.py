"""The `scalearena` command group (main.py) and its helpers; subsystems' commands live with them."""
