/** Bounds only chatbot inputs have; the shared ones are BOUNDS (src/common/input-bounds.ts). */
export const CHATBOT_BOUNDS = {
  /** chatbot `public_id` (fixtures only: the API does not write chatbots): the widget identifier embedded in customer sites */
  publicId: 100,
  /** chatbot `welcome_message` (fixtures only): the greeting a widget shows */
  welcomeMessage: 2_000,
} as const;
