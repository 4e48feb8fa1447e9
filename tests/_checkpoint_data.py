"""What the checkpoint tests run: goals about payment security asked of vaults about coffee, so that
the node is high-impact and retrieval is weak by construction (the run pauses every time)."""

from __future__ import annotations

SECURITY_GOAL = "What is our authentication architecture for the payment API contract?"
# Under the research strategy: pauses at clarify_scope, then (approved) at two sources at once.
TWO_STEP_GOAL = (
    "What is our authentication architecture for the payment API contract, "
    "and what is our database schema for billing?"
)
# Three notes in folders (conftest's ``coffee_vault``) ...
COFFEE_NOTES = {
    "Coffee/Resting.md": "# Resting beans\n\nRest roasted beans for three to seven days so carbon dioxide "
    "can escape before brewing.\n",
    "Coffee/Grinding.md": "# Grinding\n\nGrind just before brewing; a burr grinder gives an even size.\n",
    "Coffee/Water.md": "# Water\n\nUse water at 92 to 96 degrees Celsius for pour-over.\n",
}
# ... and three at the top level (the notebook-side tests).
COFFEE_FLAT = {
    "Espresso.md": "# Espresso\n\nEspresso forces hot water through fine coffee at about 9 bar for 25 s.\n",
    "Pour over.md": "# Pour over\n\nPour-over uses water at 92 to 96 degrees over medium-fine grounds.\n",
    "Beans.md": "# Beans\n\nArabica grows at altitude; robusta carries more caffeine. Rest roasted beans.\n",
}
