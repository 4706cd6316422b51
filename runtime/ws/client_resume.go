package ws

func (s *clientSession) ConversationID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.convID
}

func (s *clientSession) ResumeToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}
