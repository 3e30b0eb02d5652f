"""Onboarding and Settings on a phone: one column, every field and button on screen and
reachable by scrolling, nothing a character wide."""

from __future__ import annotations

from playwright.sync_api import Page, expect

PHONE = {"width": 390, "height": 844}

# Visible elements inside `root` whose box leaves the viewport horizontally, and text
# boxes squeezed narrower than a few characters.
LAYOUT_PROBLEMS = """(root) => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const element of document.querySelectorAll(root + ' *')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (getComputedStyle(element).visibility === 'hidden') continue;
    // The model list scrolls sideways inside its own box, as a code block does.
    if (element.closest('pre, .models-table-wrap')) continue;
    const name = `${element.tagName.toLowerCase()}.${element.className}`;
    if (box.left < -1 || box.right > width + 1) {
      out.push(`off screen: ${name} ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    const text = [...element.childNodes].some(
      (n) => n.nodeType === 3 && n.textContent.trim().length > 6);
    if (text && box.width < 60) out.push(`squeezed: ${name} ${Math.round(box.width)}px`);
  }
  return out;
}"""


def assert_laid_out(page: Page, root: str) -> None:
    problems = page.evaluate(LAYOUT_PROBLEMS, root)
    assert not problems, problems[:10]


def reachable(page: Page, locator) -> None:
    """Scrolling brings the element fully into view, and it can be clicked there."""
    locator.scroll_into_view_if_needed()
    expect(locator).to_be_in_viewport(ratio=1)


def test_onboarding_on_a_phone_is_one_column_and_every_button_is_reachable(start_foldline, make_ui):
    app = start_foldline("# nothing configured yet\n")
    ui = make_ui(app)
    ui.page.set_viewport_size(PHONE)
    ui.open()
    page = ui.page
    onboarding = page.locator("#onboarding")
    local = onboarding.locator('.choice[data-server="ollama"]')
    expect(local).to_be_visible()
    # The server's address is readable on a line, not one character per line.
    address = local.locator(".choice-sub")
    assert address.bounding_box()["height"] < 40, address.bounding_box()
    for button in [
        local.locator("button", has_text="Use Ollama"),
        onboarding.locator('.choice[data-provider="anthropic"] button', has_text="Continue"),
        onboarding.locator('.choice[data-provider="openai"] button', has_text="Continue"),
        onboarding.locator('.choice[data-provider="custom"] button', has_text="Continue"),
    ]:
        reachable(page, button)
    assert_laid_out(page, "#onboarding")
    page.locator("#onboarding").evaluate("(e) => e.scrollTo(0, 0)")
    ui.shot("phone-onboarding")


def test_settings_on_a_phone_stacks_its_tabs_above_the_panel(ui):
    page = ui.page
    page.set_viewport_size(PHONE)
    ui.open()
    # On a phone Settings is in the sidebar's drawer.
    page.locator("#sidebar-button").click()
    page.locator("#settings-button").click()
    dialog = page.locator("#settings-dialog")
    panel = dialog.locator("#settings-panel")
    for tab in ["general", "providers", "models", "compaction", "mcp"]:
        dialog.locator(f'[data-tab="{tab}"]').click()
        expect(dialog.locator(f'[data-tab="{tab}"]')).to_have_attribute("aria-selected", "true")
        # The panel takes the dialog's width, not what two columns leave.
        assert panel.bounding_box()["width"] > 300, (tab, panel.bounding_box())
        assert_laid_out(page, "#settings-dialog")
    ui.shot("phone-settings-mcp")
    reachable(page, dialog.locator("#settings-save"))


def test_the_models_list_on_a_phone_needs_no_scroll_of_its_own(
    start_foldline, make_ui, fake_provider
):
    # Many models: the list used to be a 260 px box of its own, three rows high, with
    # Adjust off to the right.
    tables = "".join(
        f'[models."model-{n}"]\nprovider = "fake"\ncontext_window = 8000\n\n' for n in range(12)
    )
    app = start_foldline(
        f'[defaults]\nmodel = "model-0"\n\n[providers.fake]\nkind = "openai-compatible"\n'
        f'base_url = "{fake_provider.openai_url}"\n\n{tables}'
    )
    ui = make_ui(app)
    page = ui.page
    page.set_viewport_size(PHONE)
    ui.open()
    page.locator("#sidebar-button").click()
    page.locator("#settings-button").click()
    page.locator('[data-tab="models"]').click()
    wrap = page.locator("#available-models .models-table-wrap")
    expect(wrap.locator("tbody tr")).to_have_count(13)  # and the server's own
    sizes = wrap.evaluate("(e) => [e.scrollHeight, e.clientHeight, e.scrollWidth, e.clientWidth]")
    assert sizes[0] <= sizes[1] + 1 and sizes[2] <= sizes[3] + 1, sizes
    for n in (0, 11):
        adjust = wrap.locator(f'tr[data-model="model-{n}"] button', has_text="Adjust")
        reachable(page, adjust)
    # Each number is named on the card (the table's header is not drawn there).
    window = wrap.locator('tr[data-model="model-3"] td[data-label="Window"]')
    expect(window).to_have_text("8k")
    before = window.evaluate("(e) => getComputedStyle(e, '::before').content")
    assert before == '"Window: "', before
    ui.shot("phone-settings-models")
