// ai + @ai-sdk/openai-compatible: streamText with tools (no execute, so the calls come back
// to the caller), reading result.fullStream as the AI SDK documentation shows.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, streamText, tool } from "ai";
import { serve, userText } from "./driver.mjs";

function toolChoice(choice) {
  if (choice === undefined) return undefined;
  if (typeof choice === "string") return choice;
  return { type: "tool", toolName: choice.function.name };
}

async function run(job, signal) {
  const provider = createOpenAICompatible({ name: "conformance", baseURL: job.base_url,
                                            apiKey: "unused" });
  const req = job.request;
  const tools = {};
  for (const t of req.tools) {
    tools[t.function.name] = tool({ description: t.function.description,
                                    inputSchema: jsonSchema(t.function.parameters ?? { type: "object" }) });
  }
  const result = streamText({
    model: provider.chatModel(job.model), prompt: userText(req), tools,
    toolChoice: toolChoice(req.tool_choice), maxOutputTokens: req.max_tokens,
    maxRetries: 0, abortSignal: signal,
  });
  const calls = [];
  for await (const part of result.fullStream) {
    if (part.type === "tool-call") {
      // invalid: the SDK could not parse or validate the input (it says why in error).
      calls.push({ id: part.toolCallId, name: part.toolName, arguments: part.input,
                   invalid: part.invalid ? String(part.error?.message ?? part.error ?? true) : undefined });
    } else if (part.type === "error") {
      throw part.error instanceof Error ? part.error : new Error(JSON.stringify(part.error));
    }
  }
  return calls;
}

serve("ai", run);
