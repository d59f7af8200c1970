// @openai/agents: an Agent on OpenAIChatCompletionsModel with the scenario's tools (their
// JSON schema, strict off), run(agent, input, {stream: true}) and the tool_called run items
// of the stream (the SDK's streaming guide). The tools only record that they were called and
// toolUseBehavior "stop_on_first_tool" ends the run there: one model request.
import { Agent, OpenAIChatCompletionsModel, run as runAgent, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { serve, userText } from "./driver.mjs";

setTracingDisabled(true); // no trace export: nothing leaves the machine

function toolChoice(choice) {
  if (choice === undefined) return undefined;
  if (typeof choice === "string") return choice;
  return choice.function.name;
}

async function run(job, signal) {
  const client = new OpenAI({ baseURL: job.base_url, apiKey: "unused", maxRetries: 0 });
  const req = job.request;
  const tools = req.tools.map((t) => tool({
    name: t.function.name, description: t.function.description ?? "",
    parameters: { type: "object", properties: {}, ...(t.function.parameters ?? {}),
                  additionalProperties: true },
    strict: false, execute: async () => "ok",
  }));
  const settings = {};
  if (req.tool_choice !== undefined) settings.toolChoice = toolChoice(req.tool_choice);
  if (req.parallel_tool_calls !== undefined) settings.parallelToolCalls = req.parallel_tool_calls;
  if (req.max_tokens !== undefined) settings.maxTokens = req.max_tokens;
  const agent = new Agent({ name: "client-matrix", tools, modelSettings: settings,
                            model: new OpenAIChatCompletionsModel(client, job.model),
                            toolUseBehavior: "stop_on_first_tool" });
  const result = await runAgent(agent, userText(req), { stream: true, maxTurns: 1, signal });
  const calls = [];
  for await (const event of result) {
    if (event.type === "run_item_stream_event" && event.name === "tool_called") {
      const raw = event.item.rawItem;
      calls.push({ id: raw.callId, name: raw.name, arguments: raw.arguments });
    }
  }
  await result.completed;
  if (result.error) throw result.error;
  return calls;
}

serve("@openai/agents", run);
