/**
 * What a recipient agrees to before their first action, unless the account set its own text
 * (`customers.consent_text`). Modelled on what the US ESIGN Act (15 U.S.C. 7001(c)) asks a consumer be
 * told before records are given electronically, and on eIDAS art. 25(1) (an electronic signature is not
 * refused legal effect for being electronic): that electronic records and signatures bind as paper
 * does, how to get a paper copy, how to withdraw consent and what withdrawing costs, and the hardware
 * and software needed to open and keep the records. Plain text: paragraphs are separated by a blank line,
 * so every page and PDF that shows it can lay it out without parsing markup.
 */
export const DEFAULT_CONSENT_TEXT = [
  'By continuing, you agree to receive, review and sign this document and the records that go with it electronically, rather than on paper.',
  'Your electronic signature and the electronic records of this transaction have the same legal effect as a handwritten signature on paper and as paper records.',
  'You may ask the sender for a paper copy of any document you sign electronically, at no charge, by replying to the email that brought you here.',
  'You may withdraw this consent at any time before you sign, by declining to sign and telling the sender, or by writing to the sender. Withdrawing does not undo anything you signed before, and the sender may then need to complete this transaction on paper.',
  'To take part you need a device with a current web browser (recent Chrome, Edge, Firefox or Safari), an internet connection, an email address you can read, and software that opens PDF files, with enough storage or a printer to keep a copy of the signed document.',
].join('\n\n');
