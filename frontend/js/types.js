// The shapes of the HTTP API and its events, generated from the server's pydantic models
// (backend/foldline/server/typedefs.py). Do not edit: regenerate with
//   python -m foldline.server.typedefs frontend/js/types.js
// The UI's functions name these types in JSDoc tags, and `tsc --checkJs` checks the UI
// against them (frontend/jsconfig.json). This file is a script, not a module, so that its
// typedefs are global to every module without an import; the page never loads it.

/**
 * @typedef {Object} ErrorDetail
 * @property {string} code
 * @property {string} message
 * @property {Array<Object<string, *>>|null} details
 */

/**
 * Every 4xx/5xx answer: `{"error": {"code", "message"}}`.
 * @typedef {Object} ErrorBody
 * @property {ErrorDetail} error
 */

/**
 * @typedef {Object} Health
 * @property {"ok"} status
 * @property {string} version
 */

/**
 * @typedef {Object} SummarizedRangeOut
 * @property {number} fromIndex
 * @property {number} toIndex
 * @property {number} messageCount
 */

/**
 * What a fold cost in billed input and what it saves over the turns after it (`core.fold_cost.fold_cost`); `cost` and `saving` are input-token equivalents at Anthropic's 5-minute cache prices (writes 1.25, reads 0.1).
 * @typedef {Object} FoldCostOut
 * @property {number} summaryInputTokens What the summarizer's input cost, in plain-input tokens (a view it read back from the prompt cache counts a tenth).
 * @property {number} rewrittenTokens The view after the fold, written to the prompt cache again by the next request.
 * @property {number} savedPerTurn How much smaller each request is after the fold.
 * @property {number} turns The turns until the next fold, at the pace the folded part grew.
 * @property {number} cost
 * @property {number} saving
 */

/**
 * One fold version (the engine's `CompactionState`).
 * @typedef {Object} CompactionOut
 * @property {number} version
 * @property {string} compactedAt
 * @property {string} summaryMessage
 * @property {number} apiStartIndex
 * @property {SummarizedRangeOut} summarizedRange
 * @property {string} strategy
 * @property {string} trigger
 * @property {number} tokensBefore
 * @property {number} tokensAfter
 * @property {string|null} model
 * @property {boolean} degraded
 * @property {Array<string>} carriedDetails The person's details this summary holds verbatim (numbers, paths, instructions...).
 * @property {number} detailsTotal
 * @property {number} detailsKept How many of `details_total` the summary contained by itself ...
 * @property {number} detailsAppended ... and how many more the person's own words kept after the summary hold (folds made before those words were kept: appended under "From the person, verbatim").
 * @property {FoldCostOut|null} foldCost None for the digest and for folds stored before it was recorded.
 */

/**
 * Tokens and dollars of some model calls (dollars null when the model has no price).
 * @typedef {Object} UsageOut
 * @property {number} calls
 * @property {number} inputTokens
 * @property {number} outputTokens
 * @property {number} cacheReadTokens
 * @property {number} cacheCreationTokens
 * @property {number|null} cost
 * @property {number|null} saved
 * @property {number} estimatedCalls How many of the calls the provider reported no usage for (stopped, or their stream broke, before its end): their tokens were counted by Foldline, so the figures are estimates.
 */

/**
 * @typedef {Object} CompactionVersionOut
 * @property {number} version
 * @property {string} compactedAt
 * @property {string} summaryMessage
 * @property {number} apiStartIndex
 * @property {SummarizedRangeOut} summarizedRange
 * @property {string} strategy
 * @property {string} trigger
 * @property {number} tokensBefore
 * @property {number} tokensAfter
 * @property {string|null} model
 * @property {boolean} degraded
 * @property {Array<string>} carriedDetails The person's details this summary holds verbatim (numbers, paths, instructions...).
 * @property {number} detailsTotal
 * @property {number} detailsKept How many of `details_total` the summary contained by itself ...
 * @property {number} detailsAppended ... and how many more the person's own words kept after the summary hold (folds made before those words were kept: appended under "From the person, verbatim").
 * @property {FoldCostOut|null} foldCost None for the digest and for folds stored before it was recorded.
 * @property {UsageOut|null} usage What this fold's summarizer calls used and cost; null for a fold without any (the emergency digest, a fold made before usage was stored).
 * @property {boolean} isCurrent
 * @property {number} parentVersion The version that was current when this one was committed (0 = none): following it from the current version gives the stack of folds in effect, skipping versions that were undone and then replaced by another fold.
 * @property {Array<string>} files The names of the files the person attached in the folded messages (on the active path), in order: the fold line lists them.
 */

/**
 * @typedef {Object} CompactionList
 * @property {Array<CompactionVersionOut>} items
 * @property {number} currentVersion 0 when no fold is current (never folded, or every fold undone).
 * @property {number|null} redoVersion An undone fold that Redo would make current again without a new summary (nothing was folded since and what it summarized is unchanged); null when there is none.
 */

/**
 * @typedef {Object} UndoResult
 * @property {CompactionOut|null} compaction The fold that is current after the undo, or null when none is left.
 */

/**
 * Where a search matched in a conversation's messages.
 * @typedef {Object} SearchHitOut
 * @property {number} index Display index (depth) of the newest matching message.
 * @property {string} snippet Its text around the first matching term.
 * @property {string} messageId
 * @property {boolean} onActivePath False when the message is on another branch: `PUT …/active-leaf {messageId}` opens that branch.
 * @property {number} matchCount How many messages of the conversation match, every branch counted (the sidebar says "N more matches").
 */

/**
 * `GET …/search`: every matching message of one conversation, in display order.
 * @typedef {Object} FindResult
 * @property {Array<SearchHitOut>} items At most 1000; each snippet shows every term found in its message.
 */

/**
 * A pinned message: it reaches the model verbatim in every request.
 * @typedef {Object} PinOut
 * @property {string} messageId
 * @property {number} index
 * @property {string} role
 * @property {string} pinnedAt
 * @property {string} excerpt The start of the message's text (at most 120 characters, on one line), so a pin can be named when its message is not on the loaded page.
 */

/**
 * The answer to pinning or unpinning: every pin of the conversation and their cost.
 * @typedef {Object} PinsOut
 * @property {Array<PinOut>} pins
 * @property {number} pinnedTokens What all pins together take in a request when every one of them is folded.
 * @property {number} capTokens The most they may take (a share of the model's input budget).
 */

/**
 * The conversation this one was handed off from ("New conversation from here").
 * @typedef {Object} OriginOut
 * @property {string} conversationId
 * @property {string} title
 * @property {string|null} messageId The last message of the origin that the hand-off covered.
 */

/**
 * A conversation handed off from this one.
 * @typedef {Object} HandoffOut
 * @property {string} conversationId
 * @property {string} title
 * @property {string} createdAt
 */

/**
 * @typedef {Object} ConversationOut
 * @property {string} id
 * @property {string} title
 * @property {string|null} model
 * @property {string|null} provider The configured provider that serves `model` (null: the one the configuration picks for it, by `[models."x"] provider` or the model's family).
 * @property {string} systemPrompt
 * @property {Object<string, *>} settings Free-form on purpose: `compaction` holds this conversation's `[compaction]` overrides (checked against those knobs when saved); any other key is the client's own and is kept as given.
 * @property {string} createdAt
 * @property {string} updatedAt
 * @property {number} messageCount Messages on the active path (what is shown); other versions are not counted.
 * @property {boolean} hasOtherVersions Some message has other versions (an edit or a regeneration): the conversation holds more messages than `messageCount`, a version switch away.
 * @property {CompactionOut|null} compaction The current fold; filled by `GET /api/conversations/{id}`, null in lists.
 * @property {SearchHitOut|null} searchHit In a search (`?q=`): the newest matching message, null when only the title matched.
 * @property {Array<PinOut>} pins The pinned messages in display order; filled by `GET /api/conversations/{id}`.
 * @property {string|null} activeLeafId The last message of the active path (null: no message yet); the display history is the path from the first message to it.
 * @property {OriginOut|null} origin Where this conversation was handed off from; filled by `GET …/{id}` (null in lists).
 * @property {Array<HandoffOut>} handoffs The conversations handed off from this one, oldest first; filled by `GET …/{id}`.
 * @property {string|null} projectId The project the conversation belongs to (null: no project).
 * @property {string|null} notice Set when part of the stored row could not be read back (it is then served as empty, e.g. `settings: {}`), saying what and how to repair it.
 * @property {number} revision Filled by `GET …/{id}`: the revision of the conversation's newest change since the server started (0: none), as the watch stream (`GET …/watch`) numbers them; a page that drew this conversation compares it with the stream's to know it is current.
 */

/**
 * @typedef {Object} ConversationList
 * @property {Array<ConversationOut>} items
 * @property {number} total
 */

/**
 * @typedef {Object} CancelResult
 * @property {boolean} cancelled False when nothing was running.
 */

/**
 * @typedef {Object} ConversationCreate
 * @property {string|null} title
 * @property {string|null} model
 * @property {string|null} provider The configured provider that serves `model` when two offer it (422 when there is no such provider; only with `model`).
 * @property {string|null} systemPrompt
 * @property {Object<string, *>|null} settings
 * @property {string|null} projectId Create it in this project (404 when there is no such project).
 */

/**
 * Fields left out (or null) are unchanged, except `projectId`, where null means "no project".
 * @typedef {Object} ConversationPatch
 * @property {string|null} title
 * @property {string|null} model
 * @property {string|null} provider With `model`: the configured provider that serves it (422 when there is no such provider). A `model` without it lets the configuration pick the provider again.
 * @property {string|null} systemPrompt
 * @property {Object<string, *>|null} settings
 * @property {string|null} projectId Move the conversation into this project; null moves it to "no project". Left out: unchanged. Its messages, folds and pins are untouched.
 */

/**
 * @typedef {Object} CompactRequest
 * @property {string|null} instructions
 * @property {number|null} keepRecentTokens Keep the recent messages holding this many tokens verbatim. Left out: only the last exchange is kept (everything before it folds).
 */

/**
 * `POST …/handoff`: a new conversation that continues this one from a message.
 * @typedef {Object} HandoffRequest
 * @property {string|null} messageId The last message the new conversation continues from (left out: the last one).
 * @property {string|null} instructions What the summary should keep or stress, as for a manual fold.
 * @property {number} keepLast Copy this many messages before the point verbatim into the new conversation.
 */

/**
 * @typedef {Object} TextPartOut
 * @property {"text"} kind
 * @property {string} text
 */

/**
 * The model's reasoning before an answer or a call: the full thinking (Anthropic) or the provider's summary of it (OpenAI). The encrypted forms the provider needs back stay in the store and in exports; they mean nothing to a reader.
 * @typedef {Object} ReasoningPartOut
 * @property {"reasoning"} kind
 * @property {string} text
 * @property {string|null} signature
 * @property {boolean} redacted The provider encrypted this reasoning (Anthropic redacted_thinking): no text.
 */

/**
 * @typedef {Object} ToolCallPartOut
 * @property {"tool-call"} kind
 * @property {string} id
 * @property {string} name
 * @property {Object<string, *>} input
 */

/**
 * @typedef {Object} ToolResultPartOut
 * @property {"tool-result"} [kind]
 * @property {string} callId
 * @property {string} name
 * @property {string} output
 * @property {boolean} isError
 * @property {string|null} compactedAt
 * @property {boolean} truncated True when `output` was cut at ingest and the original is kept (see `fullOutput`).
 * @property {string|null} [fullOutput] Only present when asked for (`?full=true` or the `/full` route): it can be large.
 */

/**
 * A file. A person's file (one with a `sha256`) carries only its metadata: its bytes come from `GET /api/conversations/{id}/attachments/{sha256}`, so pages stay light. A tool's attachment (no sha256) carries its text or bytes inline, as before.
 * @typedef {Object} AttachmentPartOut
 * @property {"attachment"} kind
 * @property {string} name
 * @property {string} mediaType
 * @property {string|null} text
 * @property {string|null} dataBase64
 * @property {string|null} sha256
 * @property {number|null} size Bytes.
 * @property {number|null} width An image's pixels.
 * @property {number|null} height
 * @property {number|null} pages A PDF's page count.
 * @property {number|null} tokens What the file costs in the model's request (Model view only; null elsewhere).
 */

/**
 * @typedef {Object} MessageOut
 * @property {number} index The display index (the store's `seq`), 0-based and dense.
 * @property {string} id
 * @property {"user"|"assistant"|"tool"} role
 * @property {Array<TextPartOut|ReasoningPartOut|ToolCallPartOut|ToolResultPartOut|AttachmentPartOut>} parts
 * @property {"complete"|"streaming"|"interrupted"|"error"} status
 * @property {boolean} inContext True when the model still sees this message verbatim (`index >= apiStartIndex`).
 * @property {string} createdAt
 * @property {string} updatedAt
 * @property {Object<string, *>|null} usage The answer's model call as reported (Foldline writes a `usage` event's fields); free-form because an imported history keeps whatever its export held.
 * @property {string|null} error
 * @property {boolean} continued Continue extended this answer in place after a stop or an error.
 * @property {string|null} parentId The message this one follows in the tree (null for a first message).
 * @property {Array<string>} siblingIds This message's id and its siblings' (other versions: same parent), oldest first; just its own id when there are none.
 */

/**
 * One page of the display history, oldest first.
 * @typedef {Object} MessagePage
 * @property {Array<MessageOut>} items
 * @property {number} total Messages in the whole history.
 * @property {number} offset
 * @property {number} limit
 * @property {number} apiStartIndex The current fold's boundary: messages before it are display-only.
 */

/**
 * @typedef {Object} FullPartOut
 * @property {string} messageId
 * @property {number} partIndex
 * @property {string} kind
 * @property {string} output The full, untruncated tool output (equal to the shown output when never truncated).
 * @property {boolean} truncated
 */

/**
 * A file sent with a message: checked (type, magic bytes, the model, the providers' limits) before anything is stored.
 * @typedef {Object} AttachmentIn
 * @property {string} name
 * @property {string} mediaType As the client declares it (`image/png`, `application/pdf`, `text/markdown` ...); the bytes must match it. Text files may say `application/octet-stream` or "".
 * @property {string} dataBase64 The bytes, base64 (standard alphabet, padded).
 */

/**
 * @typedef {Object} SendMessage
 * @property {string} content The text; may be empty when files are attached.
 * @property {Array<AttachmentIn>} attachments
 */

/**
 * @typedef {Object} EditMessage
 * @property {string} content The text; may be empty when files are attached.
 * @property {Array<AttachmentIn>} attachments
 * @property {Array<string>} keepAttachments sha256s of the edited message's files that the new version keeps (not sent again).
 */

/**
 * @typedef {Object} ActiveLeaf
 * @property {string} messageId Any message: the active leaf becomes the leaf last used in its subtree.
 */

/**
 * What editing a message would do to the model's view.
 * @typedef {Object} EditPreview
 * @property {boolean} folded True when the message is folded now: the new branch sees the earlier context again.
 * @property {number} foldsKept Folds of the current stack that still apply to the new branch.
 * @property {number} foldsDropped Folds of the current stack that summarize the edited message or later ones.
 * @property {number} viewTokens Tokens of the new branch's view before the edited message is added.
 * @property {number} contextWindow
 */

/**
 * @typedef {Object} ContextBreakdown
 * @property {number} system
 * @property {number} tools
 * @property {number} summary
 * @property {number} messages
 * @property {number} project The project's instructions, files and notes (sent in the system prompt, never folded); 0 for a conversation in no project.
 */

/**
 * A conversation's project as Model view shows it: its part of `system`.
 * @typedef {Object} ProjectInViewOut
 * @property {string} id
 * @property {string} name
 * @property {string} instructions Sent first, before the conversation's own system prompt.
 * @property {Array<string>} files The names of the files sent after the system prompt, in order.
 * @property {Array<string>} notes The titles of the pinned notes sent after the files.
 * @property {number} tokens
 * @property {number} capTokens A quarter of the input budget: above it, a turn is refused (422).
 */

/**
 * @typedef {Object} Thresholds
 * @property {number} soft
 * @property {number} hard
 */

/**
 * The meter's money: the conversation so far, its last turn, caching's saving.
 * @typedef {Object} ConversationUsageOut
 * @property {UsageOut} total Every call of the conversation (answers and summaries, dropped ones included).
 * @property {UsageOut} lastTurn The calls of the latest turn that made any.
 * @property {boolean} priced False for a model without a known price: show tokens only.
 * @property {"USD"} currency
 */

/**
 * A summary being written in the background for the next fold, or one ready.
 * @typedef {Object} BackgroundFoldOut
 * @property {"preparing"|"ready"} status
 * @property {"fold"|"resummary"} kind
 */

/**
 * The numbers the meter, `getContextStats` and the `context.stats` event share. The field order is the order the model reads in `getContextStats`; changing it changes that tool's output.
 * @typedef {Object} ContextStatsOut
 * @property {number} tokens
 * @property {number|null} inputBudget Null when the model's window is unlimited (never folds automatically).
 * @property {number} contextWindow
 * @property {number|null} workingBudget The working budget when it, not the window, sets `inputBudget` (very large windows fold early for cost per turn and answer quality); null otherwise.
 * @property {number|null} windowBudget The input tokens the window itself allows (window minus the output reserve).
 * @property {number} fraction
 * @property {boolean} exact
 * @property {ContextBreakdown} breakdown
 * @property {Thresholds} thresholds
 * @property {string} model
 * @property {boolean} modelKnown
 * @property {"active"|"deprecated"|"retired"|null} modelLifecycle From the provider's model list, else the catalog; null when neither knows.
 * @property {string|null} modelReplacement For a retired model: the current model the UI offers to switch to.
 * @property {number} version The current fold's version, 0 when nothing is folded.
 * @property {number} messagesInView
 * @property {number} messagesInHistory
 * @property {ConversationUsageOut} usage
 * @property {BackgroundFoldOut|null} backgroundFold
 */

/**
 * @typedef {Object} ApiMessageOut
 * @property {"user"|"assistant"|"tool"} role
 * @property {Array<TextPartOut|ReasoningPartOut|ToolCallPartOut|ToolResultPartOut|AttachmentPartOut>} parts
 */

/**
 * What the model sees now: the numbers of `ContextStatsOut` and the view itself.
 * @typedef {Object} ContextOut
 * @property {number} tokens
 * @property {number|null} inputBudget Null when the model's window is unlimited (never folds automatically).
 * @property {number} contextWindow
 * @property {number|null} workingBudget The working budget when it, not the window, sets `inputBudget` (very large windows fold early for cost per turn and answer quality); null otherwise.
 * @property {number|null} windowBudget The input tokens the window itself allows (window minus the output reserve).
 * @property {number} fraction
 * @property {boolean} exact
 * @property {ContextBreakdown} breakdown
 * @property {Thresholds} thresholds
 * @property {string} model
 * @property {boolean} modelKnown
 * @property {"active"|"deprecated"|"retired"|null} modelLifecycle From the provider's model list, else the catalog; null when neither knows.
 * @property {string|null} modelReplacement For a retired model: the current model the UI offers to switch to.
 * @property {number} version The current fold's version, 0 when nothing is folded.
 * @property {number} messagesInView
 * @property {number} messagesInHistory
 * @property {ConversationUsageOut} usage
 * @property {BackgroundFoldOut|null} backgroundFold
 * @property {CompactionOut|null} compaction
 * @property {string} system The system prompt the model gets.
 * @property {Array<string>} tools The names of the tools offered to the model.
 * @property {Array<ApiMessageOut>} apiMessages Empty when asked for with `?messages=false` (see `api_messages_included`).
 * @property {boolean} apiMessagesIncluded False when `apiMessages` was left out on purpose (`?messages=false`), so an empty list is never mistaken for an empty view.
 * @property {string|null} settingsNotice Set when the conversation's stored settings are invalid (saved by an older version): it then runs on the app's `[compaction]` settings, and this says why.
 * @property {ProjectInViewOut|null} project The conversation's project (null: none); `system` holds what it adds.
 */

/**
 * What a fold started now would fold.
 * @typedef {Object} CompactionPreview
 * @property {number} messages
 * @property {number} tokens
 * @property {number} fromIndex The first message the fold would summarize (the current `apiStartIndex`).
 * @property {number|null} toIndex Where the kept messages would start; null when nothing can be folded.
 */

/**
 * US dollars per million tokens.
 * @typedef {Object} ModelPricesOut
 * @property {number} input
 * @property {number} output
 * @property {number} cacheRead
 * @property {number} cacheWrite
 */

/**
 * @typedef {Object} ModelOut
 * @property {string} id
 * @property {string} provider
 * @property {string} providerKind
 * @property {string|null} displayName
 * @property {string|null} line The provider's model line (e.g. "sonnet"), when it says.
 * @property {"active"|"deprecated"|"retired"|null} lifecycle "deprecated" models are offered but marked; retired ones are never listed.
 * @property {number} contextWindow
 * @property {number} maxOutputTokens
 * @property {boolean} known False when the window is a guess: the UI flags it.
 * @property {"config"|"server"|"provider"|"catalog"|"guess"|"default"} limitSource
 * @property {number|null} workingBudget Where this model folds when smaller than its window; null = the window.
 * @property {"config"|"default"|null} workingBudgetSource
 * @property {ModelPricesOut|null} prices
 * @property {"off"|"low"|"medium"|"high"|"max"} reasoningEffort How much the model reasons unless a conversation says otherwise (`[models."x"] reasoning_effort`, else `medium` for a reasoning family, else `off`).
 * @property {boolean} reasons The model belongs to a family that reasons: an effort other than off applies.
 * @property {"responses"|"chat"} api The OpenAI API the model is reached through (always `chat` for Claude).
 * @property {string|null} windowSource With `limit_source` "server": where the local server stated the window ("llama.cpp /props n_ctx", "Ollama /api/show num_ctx", "the server's overflow error").
 * @property {string|null} server The kind of local server serving the model, once asked ("llama.cpp", "ollama").
 * @property {number|null} slots Requests the local server runs at once, when it says (1: turns and background summaries take turns).
 * @property {string|null} learnedAt When the local server was last asked about the model (ISO 8601).
 */

/**
 * @typedef {Object} ProviderModelsStatus
 * @property {string} name
 * @property {string} kind
 * @property {"ok"|"stale"|"no_key"} status "stale": the provider could not be asked (or not today); `message` says why.
 * @property {"provider"|"catalog"|"none"} source
 * @property {string|null} fetchedAt
 * @property {string|null} error
 * @property {string|null} message
 * @property {string|null} suggested A current model to suggest (onboarding, an empty default).
 */

/**
 * @typedef {Object} ModelsOut
 * @property {string} catalogDate
 * @property {Array<ProviderModelsStatus>} providers
 * @property {Array<ModelOut>} models
 */

/**
 * @typedef {Object} ModelsRefresh
 * @property {string|null} provider
 */

/**
 * A partial change to the settings, in the shape of `GET /api/settings`. `providers.NAME` / `models.NAME` set to null remove that entry. `keys` maps a provider name to a new API key (stored in the key store) or null (key removed).
 * @typedef {Object} SettingsUpdate
 * @property {Object<string, *>|null} defaults
 * @property {Object<string, Object<string, *>|null>|null} providers
 * @property {Object<string, Object<string, *>|null>|null} models
 * @property {Object<string, *>|null} compaction
 * @property {Object<string, string|null>|null} keys
 */

/**
 * One provider as Settings shows it: never its key, only a mask.
 * @typedef {Object} ProviderSettingsOut
 * @property {string} kind
 * @property {string|null} baseUrl
 * @property {"env"|"config"|null} baseUrlSource
 * @property {boolean} hasKey
 * @property {string|null} maskedKey
 * @property {"env"|"keyring"|"file"|"config"|null} keySource
 * @property {string|null} keyEnv The environment variable read for this provider's key, if any.
 */

/**
 * One `[models."name"]` table of config.toml (null: not set there).
 * @typedef {Object} ModelSettingsOut
 * @property {string|null} provider
 * @property {number|null} contextWindow
 * @property {number|null} maxOutputTokens
 * @property {number|null} inputLimit
 * @property {number|null} inputPrice
 * @property {number|null} outputPrice
 * @property {number|null} cacheReadPrice
 * @property {number|null} cacheWritePrice
 * @property {boolean|null} vision
 * @property {number|null} workingBudget
 * @property {"off"|"low"|"medium"|"high"|"max"|null} reasoningEffort
 * @property {"adaptive"|"budget"|null} thinking
 * @property {number|null} temperature
 * @property {"responses"|"chat"|null} api
 */

/**
 * The `[compaction]` settings of config.toml, every knob with its value.
 * @typedef {Object} CompactionSettingsOut
 * @property {boolean} auto
 * @property {boolean} prune
 * @property {number} threshold
 * @property {number} prepareThreshold
 * @property {number} hardThreshold
 * @property {number} target
 * @property {number} keepRecentTokens
 * @property {number} keepRecentShare
 * @property {"structured"|"narrative"} strategy
 * @property {number} personWordsShare
 * @property {number} toolResultTokenCap
 * @property {string} model
 * @property {number} pruneProtectTokens
 * @property {number} pruneMinimumTokens
 * @property {boolean} autoTitle
 * @property {Array<string>} protectedTools
 * @property {number} recallTokenCap
 * @property {"off"|"project"|"all"} recallConversations
 * @property {"off"|"low"|"medium"|"high"|"max"} reasoningEffort
 */

/**
 * @typedef {Object} DefaultsOut
 * @property {string|null} model
 */

/**
 * @typedef {Object} KeyStorageOut
 * @property {"keyring"|"file"} backend
 * @property {string|null} warning Set when keys are stored unencrypted: Settings shows it.
 */

/**
 * `GET /api/settings`: what the UI may see of config.toml and the key store.
 * @typedef {Object} SettingsOut
 * @property {string|null} dataDir
 * @property {DefaultsOut} defaults
 * @property {Object<string, ProviderSettingsOut>} providers
 * @property {Object<string, ModelSettingsOut>} models
 * @property {CompactionSettingsOut} compaction
 * @property {KeyStorageOut|null} keyStorage
 */

/**
 * @typedef {Object} ConnectionTest
 * @property {string} provider
 * @property {string|null} model
 */

/**
 * @typedef {Object} ConnectionTestResult
 * @property {boolean} ok
 * @property {string} provider
 * @property {string|null} model
 * @property {number|null} latencyMs
 * @property {string|null} errorCode `auth`, `unavailable`, `rate_limited`, `bad_request`, `timeout`, `no_model`, ...
 * @property {string|null} message
 */

/**
 * @typedef {Object} LocalServer
 * @property {string} name
 * @property {string} label
 * @property {string} baseUrl
 * @property {boolean} available
 * @property {Array<string>} models
 */

/**
 * @typedef {Object} LocalServers
 * @property {Array<LocalServer>} servers
 */

/**
 * @typedef {Object} ProjectFileOut
 * @property {string} id
 * @property {string} name
 * @property {string} mediaType
 * @property {number} size Bytes.
 * @property {string} sha256
 * @property {number|null} pages A PDF's page count (null for a text file).
 * @property {string} createdAt
 */

/**
 * @typedef {Object} ProjectNoteOut
 * @property {string} id
 * @property {string} title
 * @property {string} text
 * @property {string} createdAt
 * @property {string} updatedAt
 */

/**
 * @typedef {Object} ProjectOut
 * @property {string} id
 * @property {string} name
 * @property {string} instructions Sent before the system prompt of each of its conversations.
 * @property {string|null} model The default model of its conversations that choose none (null: the app's).
 * @property {Object<string, *>} settings `compaction` holds overrides under each conversation's own, as on a conversation.
 * @property {string} createdAt
 * @property {string} updatedAt
 * @property {number} conversationCount
 * @property {Array<ProjectFileOut>} files Filled by `GET /api/projects/{id}` (empty in the list).
 * @property {Array<ProjectNoteOut>} notes Filled by `GET /api/projects/{id}` (empty in the list).
 */

/**
 * @typedef {Object} ProjectList
 * @property {Array<ProjectOut>} items
 */

/**
 * @typedef {Object} ProjectCreate
 * @property {string} name
 * @property {string} instructions
 * @property {string|null} model
 * @property {Object<string, *>|null} settings
 */

/**
 * Fields left out are unchanged; `model: null` sets the default back to the app's.
 * @typedef {Object} ProjectPatch
 * @property {string|null} name
 * @property {string|null} instructions
 * @property {string|null} model
 * @property {Object<string, *>|null} settings
 */

/**
 * @typedef {Object} ProjectDeleted
 * @property {number} moved Conversations moved to "no project".
 * @property {number} deleted Conversations deleted with the project (only when asked for and confirmed).
 */

/**
 * @typedef {Object} ProjectFileCreate
 * @property {string} name
 * @property {string} mediaType
 * @property {string} data The file's bytes, base64.
 */

/**
 * @typedef {Object} ProjectNoteCreate
 * @property {string} title
 * @property {string} text
 */

/**
 * @typedef {Object} ProjectNotePatch
 * @property {string|null} title
 * @property {string|null} text
 */

/**
 * @typedef {Object} ProjectSearchHit
 * @property {"file"|"note"} kind
 * @property {string} id
 * @property {string} name
 * @property {string} snippet
 */

/**
 * `GET /api/projects/{id}/search?q=`: the project's matching conversations (as in `GET /api/conversations?q=`) and its files and notes that contain every term.
 * @typedef {Object} ProjectSearchOut
 * @property {Array<ConversationOut>} conversations
 * @property {Array<ProjectSearchHit>} shared
 */

/**
 * `message.created` and `message.completed`.
 * @typedef {Object} MessageEventBody
 * @property {MessageOut} message
 */

/**
 * `assistant.delta`: append `text` to the message's text (or reasoning).
 * @typedef {Object} AssistantDelta
 * @property {string} messageId
 * @property {"text"|"reasoning"} kind
 * @property {string} text
 */

/**
 * `tool.call`: the part, and the assistant message it belongs to.
 * @typedef {Object} ToolCallEventOut
 * @property {"tool-call"} kind
 * @property {string} id
 * @property {string} name
 * @property {Object<string, *>} input
 * @property {string} messageId
 */

/**
 * `tool.result`: the part, and the tool message it belongs to.
 * @typedef {Object} ToolResultEventOut
 * @property {"tool-result"} [kind]
 * @property {string} callId
 * @property {string} name
 * @property {string} output
 * @property {boolean} isError
 * @property {string|null} compactedAt
 * @property {boolean} truncated True when `output` was cut at ingest and the original is kept (see `fullOutput`).
 * @property {string|null} [fullOutput] Only present when asked for (`?full=true` or the `/full` route): it can be large.
 * @property {string} messageId
 */

/**
 * `tool.approval_required`: an MCP call waits for the person's decision.
 * @typedef {Object} ApprovalRequired
 * @property {string} callId
 * @property {string} server
 * @property {string} tool
 * @property {string} name What the model called (`SERVER__TOOL`).
 * @property {Object<string, *>} arguments
 */

/**
 * `tool.approval_resolved`: the wait ended (from any client).
 * @typedef {Object} ApprovalResolved
 * @property {string} callId
 * @property {"allow"|"always"|"deny"} decision
 */

/**
 * `tool.elicitation_required`: an MCP server asks the person something during a call. Form mode: `requestedSchema` is a flat JSON schema (strings, numbers, booleans, enums) to build the form from. URL mode: `url` is a page the person may choose to open.
 * @typedef {Object} ElicitationRequired
 * @property {string} callId
 * @property {string} elicitationId
 * @property {string} server
 * @property {string} message
 * @property {"form"|"url"} mode
 * @property {Object<string, *>} requestedSchema
 * @property {string|null} url
 */

/**
 * `tool.elicitation_resolved`: the question was answered (from any client) or dropped.
 * @typedef {Object} ElicitationResolved
 * @property {string} callId
 * @property {string} elicitationId
 * @property {"accept"|"decline"|"cancel"} action
 */

/**
 * `tool.progress`: how far a running MCP call is, as its server reports it.
 * @typedef {Object} ToolProgress
 * @property {string} callId
 * @property {number} progress
 * @property {number|null} total
 * @property {string|null} message
 */

/**
 * `notice`: something the person should know that did not stop the turn.
 * @typedef {Object} Notice
 * @property {"mcp_server_failed"|"mcp_tools_limited"|"mcp_server_awaiting_approval"|"mcp_sign_in_required"} code
 * @property {string} server
 * @property {string} message
 */

/**
 * What one model call used, as the provider reported it.
 * @typedef {Object} CallUsageOut
 * @property {number} inputTokens
 * @property {number} outputTokens
 * @property {number} cacheReadTokens
 * @property {number} cacheCreationTokens
 * @property {number} totalInput
 * @property {number} reasoningTokens Of `outputTokens`, those spent reasoning (billed as output); 0 where the provider does not split them out (Anthropic counts thinking in `outputTokens`).
 */

/**
 * `usage`: one model call's usage, for the answer being written.
 * @typedef {Object} UsageEvent
 * @property {number} inputTokens
 * @property {number} outputTokens
 * @property {number} cacheReadTokens
 * @property {number} cacheCreationTokens
 * @property {number} totalInput
 * @property {number} reasoningTokens Of `outputTokens`, those spent reasoning (billed as output); 0 where the provider does not split them out (Anthropic counts thinking in `outputTokens`).
 * @property {string} messageId
 */

/**
 * @typedef {Object} CompactionStarted
 * @property {string} trigger
 * @property {string} reason
 * @property {boolean} prepared True when a summary written in the background is being committed.
 * @property {boolean} waiting True when the turn waits for that summary (only at the hard threshold).
 */

/**
 * @typedef {Object} CompactionCompleted
 * @property {number} version
 * @property {string} strategy
 * @property {string} trigger
 * @property {number} turn
 * @property {number} tokensBefore
 * @property {number} tokensAfter
 * @property {number} apiStartIndex
 * @property {SummarizedRangeOut} summarizedRange
 * @property {boolean} degraded
 * @property {number} detailsTotal
 * @property {number} detailsKept
 * @property {number} detailsAppended
 * @property {boolean} prepared True for a fold whose summary was written in the background.
 * @property {boolean} resummarized True when a model summary replaced an emergency digest.
 */

/**
 * @typedef {Object} CompactionFailed
 * @property {string} trigger
 * @property {string} reason
 */

/**
 * @typedef {Object} PruneCompleted
 * @property {number} prunedCalls
 * @property {number} reclaimedTokens
 */

/**
 * `error`: a provider error code, `internal` or `disk_full`.
 * @typedef {Object} ErrorEventBody
 * @property {string} code
 * @property {string} message
 * @property {boolean} retryable
 */

/**
 * `done`: always the last event; `{}`, or `{"cancelled": true}` after Stop.
 * @typedef {Object} Done
 * @property {boolean} [cancelled]
 */

/**
 * @typedef {Object} McpToolOut
 * @property {string} name
 * @property {string} offeredAs
 * @property {string|null} note Why `offeredAs` is not simply `SERVER__TOOL` (a character replaced, a name cut to 64 characters, or a collision), when it is not.
 */

/**
 * @typedef {Object} McpToolOverrideIn
 * @property {"ask"|"always"|"never"|null} approval
 * @property {boolean|null} enabled
 */

/**
 * A server's settings (env values and headers masked) and its live state.
 * @typedef {Object} McpServerOut
 * @property {string} name
 * @property {"stdio"|"http"} transport
 * @property {string|null} command
 * @property {Array<string>} args
 * @property {string|null} cwd
 * @property {string|null} url
 * @property {Object<string, string>} env
 * @property {Object<string, string>} headers
 * @property {"ask"|"always"|"never"} approval
 * @property {number} timeout
 * @property {boolean} enabled
 * @property {Object<string, McpToolOverrideIn>} toolOverrides
 * @property {"stopped"|"starting"|"running"|"failed"|"disabled"|"awaiting_approval"|"signin_required"} state `awaiting_approval`: added in Settings or by an import; it starts only once the person, shown its command, allows it (`POST …/allow`). `signin_required`: a remote server waits for the person to sign in.
 * @property {string|null} error
 * @property {Array<McpToolOut>} tools
 * @property {Array<string>} disabledTools
 * @property {string|null} limits What Foldline cut or left out of this server's tools so that they cannot crowd out every request (descriptions too long, schemas too large, too many tools).
 * @property {Array<string>} hiddenTools Tools the server lists that Foldline cannot call (they run only as tasks).
 * @property {Array<string>} roots Folders the server is told about when it asks (none by default).
 * @property {boolean} signedIn Sign-in tokens are kept for this remote server.
 */

/**
 * @typedef {Object} McpServerList
 * @property {Array<McpServerOut>} servers
 */

/**
 * A server added in Settings: stdio (`command`, `args`, `env`, `cwd`) or streamable HTTP (`url`, `headers`); the other transport's fields must be left out.
 * @typedef {Object} McpServerNew
 * @property {string} name
 * @property {"stdio"|"http"} transport
 * @property {string|null} command
 * @property {Array<string>} args
 * @property {Object<string, string>} env
 * @property {string|null} cwd
 * @property {string|null} url
 * @property {Object<string, string>} headers
 * @property {"ask"|"always"|"never"} approval
 * @property {number} timeout
 * @property {boolean} enabled
 */

/**
 * A change to a configured server (Edit in Settings): only the fields given change. `env` and `headers` are merged: a value sets that name, `null` removes it, names left out keep their stored (hidden) values.
 * @typedef {Object} McpServerPatch
 * @property {string|null} command
 * @property {Array<string>|null} args
 * @property {string|null} cwd
 * @property {string|null} url
 * @property {Object<string, string|null>|null} env
 * @property {Object<string, string|null>|null} headers
 * @property {"ask"|"always"|"never"|null} approval
 * @property {number|null} timeout
 * @property {boolean|null} enabled
 * @property {Object<string, McpToolOverrideIn>|null} tools Per-tool overrides to set (merged over the stored ones).
 */

/**
 * @typedef {Object} McpImport
 * @property {string} text The contents of Claude Desktop's `claude_desktop_config.json` (or its `mcpServers`).
 * @property {boolean} replace Overwrite servers of the same name (else they are skipped).
 */

/**
 * @typedef {Object} McpImportResult
 * @property {Array<string>} imported
 * @property {Array<string>} skipped
 */

/**
 * @typedef {Object} ApprovalDecisionIn
 * @property {"allow"|"always"|"deny"} decision
 */

/**
 * @typedef {Object} PendingApprovals
 * @property {Array<ApprovalRequired>} items Each call waiting for the person, as `tool.approval_required` announced it.
 */

/**
 * @typedef {Object} RootsIn
 * @property {Array<string>} roots Absolute paths of folders the server may be told about; empty: none.
 */

/**
 * @typedef {Object} ElicitationAnswerIn
 * @property {"accept"|"decline"|"cancel"} action
 * @property {Object<string, *>|null} content The form's values (accept in form mode only).
 */

/**
 * @typedef {Object} PendingElicitations
 * @property {Array<ElicitationRequired>} items
 */

/**
 * @typedef {Object} PromptArgumentOut
 * @property {string} name
 * @property {string|null} description
 * @property {boolean} required
 */

/**
 * @typedef {Object} PromptOut
 * @property {string} server
 * @property {string} name
 * @property {string|null} title
 * @property {string|null} description
 * @property {Array<PromptArgumentOut>} arguments
 */

/**
 * @typedef {Object} PromptList
 * @property {Array<PromptOut>} items
 */

/**
 * @typedef {Object} PromptGetIn
 * @property {string} server
 * @property {string} name
 * @property {Object<string, string>} arguments
 */

/**
 * @typedef {Object} PromptText
 * @property {string} text The prompt's messages as the text of one message (a line naming what is not text).
 */

/**
 * @typedef {Object} ResourceOut
 * @property {string} uri
 * @property {string} name
 * @property {string|null} title
 * @property {string|null} description
 * @property {string|null} mimeType
 */

/**
 * @typedef {Object} ResourceList
 * @property {Array<ResourceOut>} items
 */

/**
 * @typedef {Object} ResourceReadIn
 * @property {string} uri
 */

/**
 * One resource's contents, shaped like an attachment: text, or base64 data.
 * @typedef {Object} ResourceContentOut
 * @property {string} uri
 * @property {string} name
 * @property {string} mediaType
 * @property {string|null} text
 * @property {string|null} dataBase64
 */

/** @typedef {TextPartOut|ReasoningPartOut|ToolCallPartOut|ToolResultPartOut|AttachmentPartOut} PartOut One part of a message, by `kind`. */

/**
 * The body of each server-sent event, by event name.
 * @typedef {{
 *   "message.created": MessageEventBody,
 *   "assistant.delta": AssistantDelta,
 *   "tool.call": ToolCallEventOut,
 *   "tool.result": ToolResultEventOut,
 *   "tool.approval_required": ApprovalRequired,
 *   "tool.approval_resolved": ApprovalResolved,
 *   "tool.elicitation_required": ElicitationRequired,
 *   "tool.elicitation_resolved": ElicitationResolved,
 *   "tool.progress": ToolProgress,
 *   "notice": Notice,
 *   "usage": UsageEvent,
 *   "context.stats": ContextStatsOut,
 *   "compaction.started": CompactionStarted,
 *   "compaction.completed": CompactionCompleted,
 *   "compaction.failed": CompactionFailed,
 *   "prune.completed": PruneCompleted,
 *   "message.completed": MessageEventBody,
 *   "error": ErrorEventBody,
 *   "done": Done,
 * }} EventBodies
 */

/**
 * One event of a turn's or a fold's stream: its name and its body, tagged by `name`.
 * @typedef {(
 *     {name: "message.created", data: MessageEventBody}
 *   | {name: "assistant.delta", data: AssistantDelta}
 *   | {name: "tool.call", data: ToolCallEventOut}
 *   | {name: "tool.result", data: ToolResultEventOut}
 *   | {name: "tool.approval_required", data: ApprovalRequired}
 *   | {name: "tool.approval_resolved", data: ApprovalResolved}
 *   | {name: "tool.elicitation_required", data: ElicitationRequired}
 *   | {name: "tool.elicitation_resolved", data: ElicitationResolved}
 *   | {name: "tool.progress", data: ToolProgress}
 *   | {name: "notice", data: Notice}
 *   | {name: "usage", data: UsageEvent}
 *   | {name: "context.stats", data: ContextStatsOut}
 *   | {name: "compaction.started", data: CompactionStarted}
 *   | {name: "compaction.completed", data: CompactionCompleted}
 *   | {name: "compaction.failed", data: CompactionFailed}
 *   | {name: "prune.completed", data: PruneCompleted}
 *   | {name: "message.completed", data: MessageEventBody}
 *   | {name: "error", data: ErrorEventBody}
 *   | {name: "done", data: Done}
 * )} StreamEvent
 */
